"""One error type for everything a user can fix: printed as one line, no traceback."""


class MvpError(Exception):
    """A problem the user can fix; the message says what and how."""

    def __init__(self, message: str, exit_code: int = 1):
        super().__init__(message)
        self.exit_code = exit_code
