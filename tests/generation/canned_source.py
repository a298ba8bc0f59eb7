"""A candidate-source plugin for test_sources.py: registers itself when imported, as
issue 17's agent would from its own package."""

from pkb_ray.generation.sources import CandidateSource, register_source


class Canned(CandidateSource):
    def serve(self, problem):
        return "def solution(x):\n    return x\n"


register_source(Canned("canned", calls_api=False, needs_api_key=False, what="canned answer"))
