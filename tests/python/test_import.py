"""Importing: from the build tree (PYTHONPATH=build/python) loads no plugin; from an installed prefix with no
environment variables. Import time is measured by bench/python_overhead.py, not asserted here."""
import os
import subprocess
import sys

from conftest import BUILD, real_model


def test_import_loads_no_plugin():
    # A fresh interpreter: the rest of the suite loads plugins into this one.
    code = (
        "import sys, graphsplit as gs;"
        "maps = lambda: [l for l in open('/proc/self/maps') if 'libgsplugin_' in l];"
        "assert maps() == [], 'import';"
        "gs.load_onnx(sys.argv[1], input_shape={'x': [6, 3, 48, 192]});"
        "assert maps() == [], 'load_onnx';"
        "gs.compile(sys.argv[1], input_shape={'x': [6, 3, 48, 192]});"
        "assert maps() != [], 'compile loads the pipeline plugins';"
        "print('ok')"
    )
    env = dict(os.environ, PYTHONPATH=str(BUILD / "python"))
    out = subprocess.run([sys.executable, "-c", code, str(real_model("cls"))], env=env, capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_installed_prefix_needs_no_environment(tmp_path):
    prefix = tmp_path / "prefix"
    subprocess.run(["cmake", "--install", str(BUILD), "--prefix", str(prefix)], check=True, capture_output=True)
    site = next(prefix.glob("lib*/python3*/dist-packages"))
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import graphsplit as gs, numpy as np;"
        "assert gs.__file__.startswith(sys.argv[1]), gs.__file__;"
        "c = gs.compile(sys.argv[2], input_shape={'x': [6, 3, 48, 192]});"
        "y = c.session().run({'x': np.zeros((6, 3, 48, 192), np.float32)})[0];"
        "print(y.shape)"
    )
    # LD_PRELOAD stays: under the sanitizer build it carries the ASan runtime, not a search path.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "GRAPHSPLIT", "LD_LIBRARY"))}
    out = subprocess.run([sys.executable, "-c", code, str(site), str(real_model("cls"))], env=env,
                         capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "(6, 2)"
