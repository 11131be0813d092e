"""Local models: registry (digests, manifests, pickle refusal), live prediction, the demo zoo.

``predict_live(store, model_name, inputs)`` is what annotation and the GUI call.
Importing this package is cheap: torch and transformers load on first use.
"""

from dynadesk.models.live import LivePredictor, default_predictor, predict_live
from dynadesk.models.registry import ModelDeclaration, register_model, remove_model, tree_digest, verify_model

__all__ = ["LivePredictor", "ModelDeclaration", "default_predictor", "predict_live", "register_model", "remove_model",
           "tree_digest", "verify_model"]
