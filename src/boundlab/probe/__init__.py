"""Probing: sample, verify, store per problem, and compute pass@k curves."""
