"""Unit tests of rewrite.py (run by ctest as scangrade_emu_rewrite_test)."""

import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import rewrite  # noqa: E402

HEADER = "/emu/cuda_runtime.h"


def body(text: str) -> str:
    """The rewritten text without the two prelude lines."""
    return rewrite.rewrite(text, "student.cu", HEADER).split("\n", 2)[2]


class LaunchTest(unittest.TestCase):
    def test_simple_launch(self):
        out = body("void f(int* d) { k<<<1, 32>>>(d); }\n")
        self.assertIn("launch(__FILE__, __LINE__, [&](auto&&... sg_emu_args_) { k(sg_emu_args_...); }", out)
        self.assertIn("LaunchConfig(1, 32), d)", out)

    def test_template_kernel_and_nested_parentheses(self):
        out = body("scan<T, (N > 2)><<<g, b, s * sizeof(T), st>>>(f(a, b), c[i]);\n")
        self.assertIn("{ scan<T, (N > 2)>(sg_emu_args_...); }", out)
        self.assertIn("LaunchConfig(g, b, s * sizeof(T), st), f(a, b), c[i])", out)

    def test_qualified_and_member_kernels(self):
        self.assertIn("{ ns::k(sg_emu_args_...); }", body("ns::k<<<1, 1>>>();\n"))
        self.assertIn("{ ::k(sg_emu_args_...); }", body("::k<<<1, 1>>>();\n"))
        self.assertIn("{ table[i](sg_emu_args_...); }", body("table[i]<<<1, 1>>>(x);\n"))

    def test_no_arguments(self):
        self.assertIn("LaunchConfig(1, 1))", body("k<<<1, 1>>>();\n"))

    def test_lines_are_preserved(self):
        src = "a;\nk<<<1,\n  2>>>(x,\n  y);\nb;\n"
        self.assertEqual(body(src).count("\n"), src.count("\n"))
        self.assertEqual(body(src).split("\n")[4], "b;")

    def test_text_in_comments_and_strings_is_untouched(self):
        src = 'const char* s = "k<<<1,1>>>()"; // k<<<1,1>>>()\n/* __shared__ int x; */\n'
        self.assertEqual(body(src), src)

    def test_nested_templates_are_not_launches(self):
        src = "std::vector<std::vector<std::vector<int>>> v;\n"
        self.assertEqual(body(src), src)

    def test_unclosed_launch_reports_the_line(self):
        with self.assertRaises(rewrite.RewriteError) as ctx:
            body("int x;\n\nk<<<1, 2(d);\n")
        self.assertEqual(ctx.exception.line, 3)

    def test_missing_arguments_reports_the_line(self):
        with self.assertRaises(rewrite.RewriteError) as ctx:
            body("\nk<<<1, 2>>>;\n")
        self.assertEqual(ctx.exception.line, 2)


class SharedTest(unittest.TestCase):
    def test_static_shared_arrays(self):
        out = body("__global__ void k() {\n  __shared__ float a[32], b[2][8];\n}\n")
        self.assertIn("struct sg_emu_shared_1_ { float a[32], b[2][8]; };", out)
        self.assertIn("auto& a = sg_emu_storage_1_.a; auto& b = sg_emu_storage_1_.b;", out)

    def test_extern_shared(self):
        out = body("__global__ void k() {\n  extern __shared__ __align__(16) T smem[];\n}\n")
        self.assertIn("T* smem = ::scangrade::emu::detail::dynamic_shared<T>();", out)

    def test_file_scope_shared_keeps_line_numbers(self):
        out = body("__shared__ int count;\nint after;\n")
        self.assertIn("#define count (::scangrade::emu::detail::block_shared<sg_emu_shared_1_>().count)", out)
        self.assertIn('#line 2 "student.cu"\nint after;', out)


class CommandLineTest(unittest.TestCase):
    def test_error_message_names_file_and_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / "bad.cu"
            src.write_text("void f() {\n  k<<<1, 1>>>;\n}\n")
            result = subprocess.run([sys.executable, str(Path(rewrite.__file__)), str(src), str(Path(tmp) / "o.cpp")],
                                    capture_output=True, text=True, timeout=60)
            self.assertEqual(result.returncode, 1)
            self.assertIn(f"{src}:2: error:", result.stderr)

    def test_help(self):
        result = subprocess.run([sys.executable, str(Path(rewrite.__file__)), "--help"], capture_output=True,
                                text=True, timeout=60)
        self.assertEqual(result.returncode, 0)
        self.assertIn("__shared__", result.stdout)


if __name__ == "__main__":
    unittest.main()
