"""Small local web sites that tests and benchmarks crawl (never the internet)."""
