"""``python -m scrapy_templates``: the command-line interface."""

from scrapy_templates.cli import main

raise SystemExit(main())
