# pkb:include ../_shared/moe_ep_forward/truth.py
