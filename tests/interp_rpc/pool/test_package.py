"""The package imports on 3.14 and reports what its engine was built against."""

import re
import sys
from pathlib import Path

import interp_rpc


def test_version_matches_cmake_project_version() -> None:
    cmake = (Path(__file__).parents[3] / "CMakeLists.txt").read_text()
    match = re.search(r"project\(interp_rpc VERSION ([0-9.]+)", cmake)
    assert match is not None
    assert interp_rpc.__version__ == match.group(1)


def test_engine_was_built_against_this_python() -> None:
    info = interp_rpc.build_info()
    assert info["python"] == sys.version.split()[0].split("+")[0]
    assert info["python_hexversion"] == sys.hexversion
    assert str(info["pybind11"]).startswith("3.")
    assert isinstance(info["cplusplus"], int) and info["cplusplus"] >= 202002


def test_package_ships_py_typed() -> None:
    assert (Path(interp_rpc.__file__).parent / "py.typed").is_file()


def test_reply_kinds_of_the_workers_agree_with_the_engine() -> None:
    # The engine defines success and its own error (core/codes.hpp); the
    # worker's Python code, which cannot import the engine's module, defines
    # the other kinds. They must not collide, and success must be the same.
    from interp_rpc import _core
    from interp_rpc._worker import wire

    worker_kinds = {name: value for name, value in vars(wire).items()
                    if name in ("RETURNED", "RAISED", "RESULT_UNSHAREABLE", "TARGET_UNRESOLVED",
                                "ARGUMENTS_UNLOADABLE", "SETUP_FAILED")}
    assert len(worker_kinds) == 6
    assert len(set(worker_kinds.values())) == 6
    assert worker_kinds["RETURNED"] == _core.REPLY_OK
    assert _core.REPLY_ENGINE_ERROR not in worker_kinds.values()


def test_importing_the_package_stays_light() -> None:
    # decimal (pulled in by statistics) and json are what an init= typically
    # imports: the package itself must not, or a pool's start looks cheaper
    # than it is, and every kernel start pays for them.
    import subprocess

    probe = ("import sys, interp_rpc; "
             "print(sorted(m for m in ('decimal', 'statistics', 'json') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_what_a_pool_hands_out_is_importable_from_the_package() -> None:
    """Users annotate and isinstance-check what they receive: each type is a
    public name of interp_rpc, not only of a private module."""
    with interp_rpc.InterpreterPool(workers=1) as pool:
        with pool.profile() as profile:
            assert list(pool.map(abs, [-1, -2])) == [1, 2]
        received = [pool.status()[0], pool.stats(), pool.call_records()[0], profile,
                    profile.records[0]]
    for value in received:
        name = type(value).__name__
        assert name in interp_rpc.__all__, name
        assert getattr(interp_rpc, name) is type(value)
