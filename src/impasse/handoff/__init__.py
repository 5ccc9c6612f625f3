"""Model-to-model handoff (issue 13): what the next agent receives at a switch, and what it costs.

Interfaces (:mod:`.interfaces`) turn the prefix's state into the suffix model's first messages;
:class:`.handler.HandoffHandler` is the episode phase handler that performs the switch; the
runner (:mod:`.runner`) plans single-model runs, handoffs and controls; :mod:`.metrics` computes
QRec / CSRet on the switched subset (pure).
"""
