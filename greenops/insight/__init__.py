"""Insight into what happened: the report and its hindsight oracle, carbon history, the timeline,
`greenops explain`, the placements listing, the record's rows, and the dashboard."""
