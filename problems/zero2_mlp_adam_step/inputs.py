# pkb:include ../_shared/mlp_step/exact_relu.py
# pkb:include ../_shared/zero_mlp_adam_step/inputs.py
