"""URL-normalization rules learned with the pattern tree of ``003_…``: URLs as key/value
pairs (:mod:`.url`), the pattern tree (:mod:`.tree`), duplicate clusters (:mod:`.clusters`),
rule learning (:mod:`.learn`) and the deployable :class:`~.rules.RuleSet` (:mod:`.rules`)."""
