# pkb:include ../_shared/moe_ep_forward/reference.py
