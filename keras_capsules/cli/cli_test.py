"""The ``keras-capsules`` parser: one builder per subcommand, each described, every option with its default, the version."""

import argparse
import subprocess
import sys
from importlib import metadata

import pytest

from keras_capsules import cli


def test_parser_has_one_builder_per_subcommand():
    names = []
    for add_command in cli.COMMANDS:
        subparsers = argparse.ArgumentParser().add_subparsers(dest="command")
        add_command(subparsers)
        (name,) = subparsers.choices  # each builder adds exactly one subcommand...
        assert callable(subparsers.choices[name].get_default("handler")), name  # ...with its handler
        names.append(name)
    parser = cli.build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    assert sorted(names) == sorted(commands) and len(set(names)) == len(names)
    assert {"train", "evaluate", "export", "recipes", "explain", "tune"} <= set(commands)


def test_every_subcommand_describes_itself():
    parser = cli.build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    for name, command in commands.items():
        assert command.description and len(command.description) > 40, name
        assert command.description.split()[0] in command.format_help(), name


def _options(parser):
    """``(command, option action)`` of every optional argument of every subcommand and of the main parser."""
    commands = next(a for a in parser._actions if a.dest == "command").choices
    for name, command in [("keras-capsules", parser), *commands.items()]:
        for action in command._actions:
            if action.option_strings and action.dest not in ("help", "version"):
                yield name, action


def test_every_option_states_its_default_and_numbers_their_unit():
    units = (
        "epochs",
        "epoch",
        "images",
        "steps",
        "trials",
        "levels",
        "classes",
        "iterations",
        "seed",
        "factor",
        "rate",
        "coefficient",
        "image range",
    )
    for name, action in _options(cli.build_parser()):
        flag = f"{name} {action.option_strings[-1]}"
        assert action.help and "(default: " in action.help, flag
        if action.type in (int, float) or getattr(action.type, "__name__", None) in ("int", "float", "positive_int"):
            words = f"{action.metavar or ''} {action.help}".lower()
            assert any(unit in words for unit in units), flag


def test_version_is_the_installed_distributions(capsys):
    with pytest.raises(SystemExit) as exit:
        cli.main(["--version"])
    assert exit.value.code == 0 and capsys.readouterr().out == f"keras-capsules {metadata.version('keras-capsules')}\n"


def test_python_dash_m_runs_the_command():
    done = subprocess.run(
        [sys.executable, "-m", "keras_capsules.cli", "--version"], capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stdout) == (0, f"keras-capsules {metadata.version('keras-capsules')}\n"), done.stderr
