"""The Pod page: a run's hosts side by side, opened host by host (`open_run`), held in a session
(`session`), drawn as a table and a host x step heat map (`page`, `heatmap`)."""
