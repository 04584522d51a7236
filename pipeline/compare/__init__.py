"""chatmon compare: models side by side, with confidence intervals."""
