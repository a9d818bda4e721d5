"""The emulator's error for its user."""


class EmuError(Exception):
    """An error reported to the user as `picoemu: <message>` with exit code 1."""
