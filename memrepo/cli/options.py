"""What every ``memrepo`` command line shares, as data: the global options and the per-turn commands.

The console entry point reads these tables before deciding where a call runs (the resident
server or this process), the typer app declares its global options from them, and the server
warms up the commands they name: one table each, and nothing here imports more than ``sys``,
because the entry point pays for it on every agent turn.
"""
from __future__ import annotations


class GlobalOption:
    """An option every command accepts, before or after the command name (as in git and gh).

    (A plain class: ``typing.NamedTuple`` would cost the entry point the ``typing`` import.)"""

    __slots__ = ("name", "envvar", "takes_value", "help")

    def __init__(self, name: str, envvar: str | None, takes_value: bool, help: str):
        self.name = name            # the typer parameter
        self.envvar = envvar        # read when the option is not given
        self.takes_value = takes_value
        self.help = help


AGENT_ENV = "MEMREPO_AGENT"  # the acting agent, read here and passed to the library as agent=
GLOBAL_OPTIONS: dict[str, GlobalOption] = {
    "--vault": GlobalOption("vault", "MEMREPO_VAULT", True,
                            "Vault to use (default: found from the current directory, as git does)."),
    "--agent": GlobalOption("agent", AGENT_ENV, True,
                            "The agent acting (before or after the command): its private memories, its proposals."),
    "--json": GlobalOption("as_json", None, False,
                           "JSON output and JSON errors (also accepted after the command)."),
}
VALUED = tuple(flag for flag, option in GLOBAL_OPTIONS.items() if option.takes_value)

# The commands an agent runs on every turn: the resident server answers these warm.
PER_TURN = ("search", "recall", "context", "add")


def hoist_globals(args: list[str]) -> tuple[bool, list[str], list[str]]:
    """Global options wherever they stand (before ``--``): whether ``--json`` was given, the
    valued options (``--vault X``, ``--vault=X``) to put before the command, and the rest."""
    as_json, front, rest = False, [], []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            rest += args[i:]
            break
        if arg == "--json":
            as_json = True
        elif arg in VALUED and i + 1 < len(args):
            front += [arg, args[i + 1]]
            i += 1
        elif arg.startswith(tuple(f"{v}=" for v in VALUED)):
            front.append(arg)
        else:
            rest.append(arg)
        i += 1
    return as_json, front, rest


def command_of(args: list[str]) -> str | None:
    """The command a command line names (its first word that is not a global option)."""
    rest = hoist_globals(args)[2]
    return rest[0] if rest and not rest[0].startswith("-") else None
