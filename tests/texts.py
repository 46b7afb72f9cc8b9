"""Short news sentences that share few words: page text for tests that need content to vary."""

STORIES = [
    "The river rose overnight and the bridge closed before dawn.",
    "A new telescope photographed the ring around a distant planet.",
    "Voters in the island election waited hours to cast a ballot.",
    "Factory exports fell for a third month as orders slowed down.",
    "The library opens a reading room for children on Saturdays.",
    "Coaches agreed on a method to train young players in winter.",
    "Hospital staff tested a faster way to register new patients.",
    "Credit networks failed for an hour across the northern region.",
]
