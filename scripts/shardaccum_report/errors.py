"""The one error type the tools report to users instead of a traceback."""


class InputError(Exception):
    """A problem with an input file or argument, reported as 'PATH: problem' and exit status 2.

    Attributes:
        path: the file the problem is in ("" when it is not about one file).
        problem: what is wrong, in words a user can act on.
    """

    def __init__(self, path: str, problem: str):
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}" if self.path else problem)
