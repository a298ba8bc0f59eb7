"""What crosses the trust boundary between a judge and its worker, and how.

Both sides import this package; it holds no secret and decides nothing. The judge never
unpickles anything the worker sends: messages are length-prefixed JSON, decoded into
frozen dataclasses with every field's type checked, and bounded in size.
"""
