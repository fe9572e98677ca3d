from tests.lake.server import lake

__all__ = ["lake"]
