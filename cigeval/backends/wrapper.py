"""The base of a backend that answers through another one (the response cache, the batch path):
it is the same model at the same servers, so it forwards what names them and their check."""

from __future__ import annotations

from typing import Generic, TypeVar

from cigeval.backends.base import Backend, backend_endpoint

B = TypeVar("B", bound=Backend)


class WrappingBackend(Generic[B]):
    """Forwards :attr:`identity`, :attr:`endpoint` and :meth:`preflight` to ``inner`` (the
    wrapped backend's answers are the same model's answers); subclasses answer
    :meth:`complete` their own way."""

    def __init__(self, inner: B) -> None:
        self.inner = inner

    @property
    def identity(self) -> str:
        """The wrapped backend's identity."""
        return self.inner.identity

    @property
    def endpoint(self) -> str | None:
        """The wrapped backend's server set (see :func:`backend_endpoint`)."""
        return backend_endpoint(self.inner)

    async def preflight(self) -> None:
        """The wrapped backend's preflight check, when it has one."""
        check = getattr(self.inner, "preflight", None)
        if check is not None:
            await check()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.inner!r})"
