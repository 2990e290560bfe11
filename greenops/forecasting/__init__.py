"""Carbon-intensity forecasting: per-zone models trained on hourly traces, tracked and registered
in MLflow, served over the Open Inference Protocol by MLServer, read by the scheduler's OIP source."""
