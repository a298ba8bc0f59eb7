# pkb:include ../_shared/zero_mlp_adam_step/inputs.py
