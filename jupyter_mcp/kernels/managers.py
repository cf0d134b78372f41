"""The server's kernel machinery through one face, for local kernels and kernels behind a gateway.

jupyter_server's kernel-spec manager, kernel managers and kernel clients have two faces. Local
kernels have sync kernel specs, processes with a pid, and clients whose channels start with a
plain call. A server started with ``--gateway-url`` has jupyter_server's gateway classes
instead: kernel specs that are coroutines (an HTTP request to the gateway), kernel managers
that are models refreshed over HTTP (no process here; the state is as fresh as the last
request), and clients whose websocket channels start with ``await`` (this package's own
:class:`~jupyter_mcp.kernels.gateway.GatewayKernelConnection`, which also carries the
gateway's token). Every module of the kernel layer, and the run configurations, reach kernels
through the functions here, so no other code asks which face it has.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import weakref
from collections import Counter
from collections.abc import AsyncIterator, Callable
from typing import Any

from jupyter_client.session import Session
from jupyter_core.utils import ensure_async
from jupyter_server._tz import utcnow
from jupyter_server.gateway.managers import GatewayKernelManager, GatewayMappingKernelManager
from tornado import web

from ..core.context import outside_the_call
from ..core.errors import ToolError
from .gateway import GatewayKernelConnection, connection_to

#: Seconds a new client's kernel has to answer ``kernel_info``.
READY_TIMEOUT = 60.0


def kernel_manager(serverapp: Any) -> Any:
    """The server's MappingKernelManager (a clear error outside a server)."""
    manager = getattr(serverapp, "kernel_manager", None)
    if manager is None:
        raise ToolError("Kernels need a Jupyter server; this context has none")
    return manager


def kernel(serverapp: Any, kernel_id: str) -> Any:
    """The KernelManager of the server's kernel ``kernel_id``; KeyError when there is none
    (jupyter_server's own lookup raises an HTTP 404 error instead)."""
    kernels = kernel_manager(serverapp)
    if kernel_id not in kernels:
        raise KeyError(kernel_id)
    return kernels.get_kernel(kernel_id)


def behind_gateway(serverapp: Any) -> bool:
    """Whether the server's kernels run behind a gateway (``--gateway-url``)."""
    return isinstance(getattr(serverapp, "kernel_manager", None), GatewayMappingKernelManager)


def describe(error: BaseException) -> str:
    """What went wrong, as a person reads it (a gateway's HTTP error says its own message)."""
    if isinstance(error, web.HTTPError) and error.log_message:
        try:
            return error.log_message % error.args if error.args else error.log_message
        except TypeError:
            return error.log_message
    return str(error) or type(error).__name__


# -- kernel specs ------------------------------------------------------------------------------


def _not_listed(serverapp: Any, error: Exception) -> ToolError:
    if not behind_gateway(serverapp):
        return ToolError(f"The server's kernels could not be listed: {describe(error)}")
    hint = ""
    if isinstance(error, web.HTTPError) and error.status_code in (401, 403):
        hint = " (the gateway wants another token: --GatewayClient.auth_token)"
    return ToolError(
        f"The kernel gateway could not be asked for its kernels: {describe(error)}{hint}"
    )


async def kernel_specs(serverapp: Any) -> dict[str, Any]:
    """The server's kernelspecs by name (``{"spec": {"language", "display_name", …}, …}``)."""
    specs_manager = kernel_manager(serverapp).kernel_spec_manager
    try:
        specs = await ensure_async(specs_manager.get_all_specs())
    except Exception as e:
        raise _not_listed(serverapp, e) from e
    return dict(specs or {})


def spec_of(specs: dict[str, Any], name: str | None) -> dict[str, Any]:
    """The ``spec`` part (language, display name, argv …) of kernelspec ``name``; {} if unknown."""
    entry = specs.get(name or "") or {}
    spec = entry.get("spec") if isinstance(entry, dict) else None
    return dict(spec) if isinstance(spec, dict) else {}


async def kernel_language(serverapp: Any, manager: Any) -> str:
    """The language (lower case) of the kernelspec a kernel was started from; "" if unknown.

    Asked of the server's kernel-spec manager: behind a gateway the kernel manager's own
    ``kernel_spec`` would look for the name among this machine's kernelspecs.
    """
    try:
        specs = await kernel_specs(serverapp)
    except ToolError:
        return ""
    return str(spec_of(specs, getattr(manager, "kernel_name", None)).get("language") or "").lower()


# -- kernels -----------------------------------------------------------------------------------


#: The events jupyter_server's kernel managers emit after each start, restart, interrupt and
#: shutdown, local or behind a gateway.
KERNEL_ACTIONS = "https://events.jupyter.org/jupyter_server/kernel_actions/v1"

# Restarts each event logger (each server) told of, by kernel id.
_restarts: weakref.WeakKeyDictionary[Any, Counter[str]] = weakref.WeakKeyDictionary()


def _restarts_told(events: Any) -> Counter[str]:
    counts = _restarts.get(events)
    if counts is None:
        counts = _restarts[events] = Counter()

        async def count(logger: Any, schema_id: str, data: dict[str, Any]) -> None:
            if data.get("action") == "restart" and data.get("status") == "success":
                counts[str(data.get("kernel_id"))] += 1

        events.add_listener(schema_id=KERNEL_ACTIONS, listener=count)
    return counts


def incarnation(manager: Any) -> tuple[Any, int]:
    """What tells this run of a kernel's process from the next one (a restart's).

    A local kernel's process id, and how often the server restarted the kernel (JupyterLab's
    restart, a tool's): a gateway's kernels run elsewhere, with no process id here.
    """
    provisioner = getattr(manager, "provisioner", None)
    pid = getattr(provisioner, "pid", None) if provisioner is not None else None
    events = getattr(manager, "event_logger", None)
    told = _restarts_told(events)[str(manager.kernel_id)] if events is not None else 0
    return pid, told


async def not_alive(manager: Any) -> str | None:
    """None while the kernel runs; else why it does not (it stopped, the gateway no longer
    has it, or the gateway cannot be asked)."""
    try:
        alive = bool(await ensure_async(manager.is_alive()))
    except Exception as e:
        return describe(e)
    if isinstance(manager, GatewayKernelManager) and not manager.has_kernel:
        # The gateway's manager answers True the first time its kernel is found gone (it
        # forgets the kernel's model, and answers from the model from then on).
        return "the kernel gateway no longer has this kernel (it was shut down or culled)"
    return None if alive else "the kernel stopped"


def process_groups(serverapp: Any) -> list[int]:
    """The process groups of the server's kernels that run on this machine (none behind a
    gateway), for ending them when the server exits without shutting them down."""
    manager = getattr(serverapp, "kernel_manager", None)
    if manager is None or behind_gateway(serverapp):
        return []
    groups = []
    for kernel_id in list(manager.list_kernel_ids()):
        with contextlib.suppress(Exception):  # gone meanwhile, or not a local process
            provisioner = manager.get_kernel(kernel_id).provisioner
            group = getattr(provisioner, "pgid", None) or getattr(provisioner, "pid", None)
            if isinstance(group, int) and group > 1:
                groups.append(group)
    return groups


def stamp_new_kernels(serverapp: Any) -> Callable[[], None] | None:
    """Give each kernel the server's kernel manager makes its activity time at once; returns
    the function that puts the manager's own factory back (None: nothing to do).

    jupyter_server lists a kernel as soon as jupyter_client has started it, but stamps its
    ``last_activity`` only once its own start resumes, a turn of the event loop later; a
    ``GET /api/status`` or ``/api/kernels`` in between fails with HTTP 500 (a TraitError: the
    kernel has no time to show), seen under a load of twenty kernels starting. Upstream, as
    of jupyter_server 2.21.1: ``MappingKernelManager.kernel_model`` and ``list_kernels`` in
    ``jupyter_server/services/kernels/kernelmanager.py`` (lines 533-563), the stamp at line
    267. The stamp here is the kernel's creation; the server's own replaces it a moment later.
    """
    manager: Any = getattr(serverapp, "kernel_manager", None)
    factory = getattr(manager, "kernel_manager_factory", None)
    if factory is None or behind_gateway(serverapp) or getattr(factory, "stamps", False):
        return None

    def stamped(*args: Any, **kwargs: Any) -> Any:
        kernel = factory(*args, **kwargs)
        if kernel.has_trait("last_activity"):  # a new manager has none: read, it raises
            kernel.last_activity = utcnow()
        return kernel

    stamped.stamps = True  # type: ignore[attr-defined]
    manager.kernel_manager_factory = stamped

    def restore() -> None:
        if manager.kernel_manager_factory is stamped:
            manager.kernel_manager_factory = factory

    return restore


async def is_alive(manager: Any) -> bool:
    """Whether the kernel still runs (False too when the gateway cannot be asked)."""
    return await not_alive(manager) is None


def restarts_itself(manager: Any) -> bool:
    """Whether a kernel that died comes back by itself while its manager says it is not
    alive: a local kernel's restarter restarts it a few seconds later; a gateway restarts its
    kernels out of sight, so one it reports not alive stays so."""
    return not isinstance(manager, GatewayKernelManager)


async def refresh(serverapp: Any) -> None:
    """Bring the states of a gateway's kernels up to date (one request), forgetting kernels
    the gateway culled; local kernels' states are always current."""
    if behind_gateway(serverapp):
        try:
            await kernel_manager(serverapp).list_kernels()
        except Exception as e:
            raise _not_listed(serverapp, e) from e


async def state(manager: Any) -> str:
    """The kernel's execution state ("idle", "busy", "starting" …, "unknown"), refreshed from
    the gateway for a gateway's kernel."""
    if isinstance(manager, GatewayKernelManager):
        with contextlib.suppress(Exception):
            await manager.refresh_model()
    return getattr(manager, "execution_state", None) or "unknown"


async def start_kernel(serverapp: Any, **options: Any) -> str:
    """Start a kernel (``kernel_name``, ``path`` …); its id."""
    manager = kernel_manager(serverapp)
    return str(await outside_the_call(ensure_async(manager.start_kernel(**options))))


async def restart_kernel(serverapp: Any, kernel_id: str) -> None:
    """Restart a kernel (a new process; the same id)."""
    manager = kernel_manager(serverapp)
    await outside_the_call(ensure_async(manager.restart_kernel(kernel_id)))


async def interrupt_kernel(serverapp: Any, kernel_id: str) -> None:
    """Interrupt what a kernel runs."""
    await ensure_async(kernel_manager(serverapp).interrupt_kernel(kernel_id))


async def shutdown_kernel(serverapp: Any, kernel_id: str, *, now: bool = False) -> None:
    """Shut a kernel down."""
    await ensure_async(kernel_manager(serverapp).shutdown_kernel(kernel_id, now=now))


# -- clients -----------------------------------------------------------------------------------


def new_client(manager: Any, *, own_session: bool = False) -> Any:
    """A client of the kernel ``manager`` manages; its channels are not started.

    With ``own_session``, the client signs with a session (a zmq identity) of its own:
    ``manager.client()`` shares the manager's, and a local kernel sends every reply to
    whichever client of that identity connected last, so another client of the server would
    take this one's replies.
    """
    options: dict[str, Any] = {}
    if own_session:
        session = manager.session
        options["session"] = Session(key=session.key, signature_scheme=session.signature_scheme)
    if isinstance(manager, GatewayKernelManager):
        return connection_to(manager, **options)
    return manager.client(**options)


async def connect(client: Any, *, timeout: float = READY_TIMEOUT) -> None:
    """Start the client's channels and wait until its kernel answers ``kernel_info``.

    A client that does not get there has its channels closed again; the error says why.
    """
    try:
        await ensure_async(client.start_channels())
        await ensure_async(client.wait_for_ready(timeout=timeout))
    except BaseException:
        disconnect(client)
        raise


async def kernel_info(client: Any, *, timeout: float = 10.0) -> dict[str, Any]:
    """The content of the kernel's ``kernel_info`` reply (its language, implementation …), or
    {} when it does not answer in time (it started running a cell meanwhile)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    msg_id = client.kernel_info()
    while (left := deadline - loop.time()) > 0:
        try:
            reply = await ensure_async(client.get_shell_msg(timeout=min(left, 1.0)))
        except queue.Empty:
            continue
        if reply.get("parent_header", {}).get("msg_id") == msg_id:
            return dict(reply.get("content") or {})
    return {}


def disconnect(client: Any) -> None:
    """Stop the client's channels (a client that never connected has none)."""
    with contextlib.suppress(Exception):
        client.stop_channels()


def connection_lost(client: Any) -> bool:
    """Whether the client's kernel is gone for it: behind a gateway, the gateway restarted
    the kernel or the websocket closed. A local client's channels cannot be lost (its
    kernel's process id tells a restart)."""
    return isinstance(client, GatewayKernelConnection) and client.lost


def connection_closed(client: Any) -> bool:
    """Whether a gateway client's websocket closed (not a restart of its kernel: the kernel was
    shut down at the gateway, or the gateway went away)."""
    return isinstance(client, GatewayKernelConnection) and client.closed


async def client_alive(client: Any, manager: Any, connected_to: tuple[Any, int]) -> bool:
    """Whether the kernel a client connected to (its :func:`incarnation` then) still runs, as
    the same process."""
    if connection_lost(client) or incarnation(manager) != connected_to:
        return False
    return await is_alive(manager)


@contextlib.asynccontextmanager
async def connected_client(
    serverapp: Any, kernel_id: str, *, timeout: float = READY_TIMEOUT
) -> AsyncIterator[Any]:
    """A client of the server's kernel ``kernel_id``, ready to execute; closed on exit."""
    client = new_client(kernel(serverapp, kernel_id))
    await connect(client, timeout=timeout)
    try:
        yield client
    finally:
        disconnect(client)
