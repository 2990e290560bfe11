"""Metrics, traces and alerts: what an on-call engineer sees of the platform."""
