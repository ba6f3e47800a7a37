"""The widget kit every view shares: headline cards, labels and panels, item delegates, sortable
table cells, chart styling and chart hit-testing.

Each module holds one kind of widget; views import what they use from it instead of carrying a
copy. Nothing here knows a view, an analysis or a trace: the kit draws what it is given.
"""
