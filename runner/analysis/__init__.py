"""Analysis of results: pass@k, trial statistics, calibration and agreement, paired comparison, summaries, coverage."""
