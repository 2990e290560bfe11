"""The MLflow pyfunc wrapper MLServer's MLflow runtime serves.

MLServer decodes an OIP v2 request into a dict of named tensors; this wrapper takes the
``features`` tensor and answers plain [n, H] FP64 tensors, the shape the scheduler reads (the
thesis wrapped its PyTorch forecaster's custom output class the same way). A calibrated model
answers three named tensors, ``forecast`` first, then the prediction interval's ``lower`` and
``upper`` bound (MLServer's MLflow runtime sends a dict of arrays as one output per key, in order);
a model without intervals answers the single plain tensor it always has.
"""

from __future__ import annotations

import numpy as np
from mlflow.pyfunc.model import PythonModel  # what mlflow.pyfunc.PythonModel is (mypy sees mlflow.pyfunc as lazy)

from greenops.models.forecast_features import FEATURES, INPUT_NAME, OUTPUT_NAMES

from .estimator import CarbonForecastRegressor


class OipForecaster(PythonModel):
    # The logged tensor signature validates the input; MLflow's type-hint validation has no tensor
    # type and would reject the dict of named tensors MLServer passes in, so it is switched off.
    _skip_type_hint_validation = True

    def __init__(self, estimator: CarbonForecastRegressor):
        self.estimator = estimator

    # MLflow reads predict's parameter annotations when it logs and serves the model (signature inference,
    # input conversion), so they stay unannotated and the model behaves as it always has
    def predict(self, context, model_input, params=None) -> np.ndarray | dict[str, np.ndarray]:  # type: ignore[no-untyped-def]
        if isinstance(model_input, dict):
            if INPUT_NAME not in model_input:
                raise ValueError(f"expected an input tensor named {INPUT_NAME!r}, got {sorted(model_input)}")
            model_input = model_input[INPUT_NAME]
        elif hasattr(model_input, "to_numpy"):
            model_input = model_input.to_numpy()
        rows = np.asarray(model_input, dtype=float).reshape(-1, FEATURES)
        if getattr(self.estimator, "log_bounds", None) is None:  # also a model pickled before intervals
            clipped: np.ndarray = np.clip(self.estimator.predict(rows), 0.0, None)
            return clipped
        tensors = self.estimator.predict_interval(rows)
        return {name: np.clip(t, 0.0, None) for name, t in zip(OUTPUT_NAMES, tensors, strict=True)}
