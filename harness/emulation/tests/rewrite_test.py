"""Unit tests of rewrite.py (run by ctest as scangrade_emu_rewrite_test).

CompilerParityTest also compiles rewritten snippets with the host compiler against the emulator's
headers and compares with nvcc's verdicts (measured with nvcc 13.0 and written beside each snippet);
SCANGRADE_EMU_CHECK_NVCC=1 measures them again with the nvcc on PATH.
"""

import concurrent.futures
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import rewrite  # noqa: E402

HEADER = "/emu/cuda_runtime.h"
EMU_INCLUDE = Path(__file__).resolve().parent.parent / "include"
LAUNCHER = "::scangrade::emu::detail::launch(__FILE__, __LINE__, "


def body(text: str) -> str:
    """The rewritten text without the two prelude lines."""
    return rewrite.rewrite(text, "student.cu", HEADER).split("\n", 2)[2]


def call(kernel: str) -> str:
    """The lambda a launch of a plain kernel name becomes."""
    return f"[&](auto&&... sg_emu_args_) {{ {kernel}(sg_emu_args_...); }}"


def call_once(expression: str) -> str:
    """The lambda a launch of a kernel expression (evaluated once) becomes."""
    return f"[sg_emu_kernel_ = ({expression})](auto&&... sg_emu_args_) {{ sg_emu_kernel_(sg_emu_args_...); }}"


def config(text: str) -> str:
    return f"::scangrade::emu::detail::launch_config({text})"


class LaunchTest(unittest.TestCase):
    def test_simple_launch(self):
        out = body("void f(int* d) { k<<<1, 32>>>(d); }\n")
        self.assertEqual(out, f"void f(int* d) {{ {LAUNCHER}{call('k')}, {config('1, 32')}, d); }}\n")

    def test_template_kernel_and_nested_parentheses(self):
        out = body("scan<T, (N > 2)><<<g, b, s * sizeof(T), st>>>(f(a, b), c[i]);\n")
        self.assertIn(call("scan<T, (N > 2)>"), out)
        self.assertIn(f"{config('g, b, s * sizeof(T), st')}, f(a, b), c[i])", out)

    def test_no_arguments(self):
        self.assertIn(f"{config('1, 1')});", body("k<<<1, 1>>>();\n"))
        self.assertIn(f"{config('1, 1')} /* none */ );", body("k<<<1, 1>>>( /* none */ );\n"))

    def test_lines_are_preserved(self):
        src = "a;\nk<<<1,\n  2>>>(x,\n  y);\nb;\n"
        self.assertEqual(body(src).count("\n"), src.count("\n"))
        self.assertEqual(body(src).split("\n")[4], "b;")

    def test_text_in_comments_and_strings_is_untouched(self):
        src = 'const char* s = "k<<<1,1>>>()"; // k<<<1,1>>>()\n/* __shared__ int x; */ char c = \'<\';\n'
        self.assertEqual(body(src), src)

    def test_nested_templates_and_shifts_are_not_launches(self):
        src = "std::vector<std::vector<std::vector<int>>> v;\nint x = a << b, y = a >> b, z = a <<= 2;\n"
        self.assertEqual(body(src), src)

    def test_operator_shift_specializations_are_not_launches(self):
        src = "friend int operator<< <T>(int, X<T>);\nfriend int operator<<<T>(int, Y<T>);\n"
        self.assertEqual(body(src), src)

    def test_unclosed_launch_reports_the_line(self):
        with self.assertRaises(rewrite.RewriteError) as ctx:
            body("int x;\n\nk<<<1, 2(d);\n")
        self.assertEqual(ctx.exception.line, 3)

    def test_missing_arguments_reports_the_line(self):
        with self.assertRaises(rewrite.RewriteError) as ctx:
            body("\nk<<<1, 2>>>;\n")
        self.assertEqual(ctx.exception.line, 2)

    def test_empty_configuration_is_an_error(self):
        # nvcc: "too few arguments in function call"
        with self.assertRaises(rewrite.RewriteError):
            body("k<<<>>>(d);\n")

    def test_grid_only_is_passed_on(self):
        # nvcc accepts k<<<g>>>: its configuration call defaults the block to 1 (so does launch_config)
        self.assertIn(f"{config('4')}, d)", body("k<<<4>>>(d);\n"))


class ChevronTest(unittest.TestCase):
    """Which spellings of <<< and >>> open and close a launch (nvcc's rule, see rewrite.py)."""

    def test_visual_studio_spacing(self):
        out = body("k << <grid, block, shmem >> > (d, n);\n")
        self.assertEqual(out, f"{LAUNCHER}{call('k')}, {config('grid, block, shmem ')}, d, n);\n")

    def test_comments_and_tabs_between_chevrons(self):
        out = body("k <</*a*/< 1, 2 >>/*b*/>(d);\nk <<\t< 1, 2 >>\t>(d);\n")
        self.assertEqual(out.count(config(" 1, 2 ")), 2)

    def test_line_breaks_in_the_closing_chevrons_and_before_the_arguments(self):
        src = "k<<<1, 2>>\n>\n(d,\n e);\nafter;\n"
        out = body(src)
        self.assertIn(config("1, 2"), out)
        self.assertEqual(out.count("\n"), src.count("\n"))
        self.assertEqual(out.split("\n")[4], "after;")

    def test_line_splice_joins_chevrons(self):
        self.assertIn(config("1, 2"), body("k<<\\\n<1, 2>>>(d);\n"))

    def test_opening_chevrons_split_across_lines_are_no_launch(self):
        # nvcc rejects all of these ("expected an expression"); left as they are, so does g++
        for src in ("k <<\n< 1, 2 >>> (d);\n", "k << // c\n< 1, 2 >>> (d);\n", "k <</*\n*/< 1, 2 >>> (d);\n",
                    "k < << 1, 2 > >> (d);\n", "k < < < 1, 2 > > > (d);\n"):
            with self.subTest(src=src):
                self.assertNotIn("launch(", body(src))

    def test_closing_chevrons_nvcc_rejects_are_errors(self):
        # `> >>`, `> > >`, `>> >>` do not close; `>>>>` closes early and leaves a '>' before '('
        for src in ("k<<<1, 2> >>(d);\n", "k<<<1, 2> > >(d);\n", "k<<<1, 2 >> >>(d);\n",
                    "k<<<1, W<2>::v>>>>(d);\n"):
            with self.subTest(src=src), self.assertRaises(rewrite.RewriteError):
                body(src)


class ConfigurationTest(unittest.TestCase):
    def test_shift_and_comparison_operators(self):
        self.assertIn(config("n >> 1, 32"), body("k<<<n >> 1, 32>>>(d);\n"))
        self.assertIn(config("dim3(a<b ? 1 : 2), 256"), body("k<<<dim3(a<b ? 1 : 2), 256>>>(d);\n"))
        self.assertIn(config("a > 1 ? 2 : 1, 32"), body("k<<<a > 1 ? 2 : 1, 32>>>(d);\n"))
        self.assertIn(config("1, x >>= 1"), body("k<<<1, x >>= 1>>>(d);\n"))

    def test_templates_in_the_configuration(self):
        self.assertIn(config("W<W<1>>::v, 32"), body("k<<<W<W<1>>::v, 32>>>(d);\n"))
        self.assertIn(config("1, W<64>::v >> 1 "), body("k<<<1, W<64>::v >> 1 >> >(d);\n"))
        self.assertIn(config("f<int>(3), b"), body("k<<<f<int>(3), b>>>(d);\n"))

    def test_braces_and_lambdas(self):
        self.assertIn(config("dim3{1, 1, 1}, {32, 1, 1}"), body("k<<<dim3{1, 1, 1}, {32, 1, 1}>>>(d);\n"))
        self.assertIn(config("[]{ return 1; }(), 32"), body("k<<<[]{ return 1; }(), 32>>>(d);\n"))

    def test_statement_end_inside_is_an_error(self):
        with self.assertRaises(rewrite.RewriteError):
            body("k<<<1, 2;\n")


class KernelExpressionTest(unittest.TestCase):
    def kernel_of(self, src: str) -> str:
        out = body(src)
        self.assertIn(LAUNCHER, out)
        return out[out.index(LAUNCHER) + len(LAUNCHER):out.index(", ::scangrade::emu::detail::launch_config(")]

    def test_template_kernels(self):
        for kernel in ("k<T, 4>", "k<int, BLOCK * 2>", "k<Op<int>, 8>", "k<Op<int>>", "ns::k<T>", "::ns::k<T>",
                       "k<int, (3 > 2)>", "k<int, 1 < 2>", "k<int, 1 << 2>", "k<int, sizeof(T) * 8>",
                       "A<int>::k<T>"):
            with self.subTest(kernel=kernel):
                self.assertEqual(self.kernel_of(f"{kernel}<<<g, b>>>(d);\n"), call(kernel))

    def test_kernel_expression_on_several_lines(self):
        src = "k<int, // the type\n  4>\n<<<1, 2>>>(d);\nafter;\n"
        out = body(src)
        self.assertIn(call("k<int, 4>"), out)
        self.assertEqual(out.split("\n")[3], "after;")

    def test_plain_names_keep_template_deduction(self):
        for kernel in ("kp", "ns::kp", "(k)", "(ns::k<T>)"):
            with self.subTest(kernel=kernel):
                self.assertEqual(self.kernel_of(f"{kernel}<<<g, b>>>(d);\n"), call(kernel))

    def test_other_expressions_are_evaluated_once(self):
        for kernel in ("table[i]", "t[i][j]", "(flag ? k1 : k2)", "(*kp)", "s.kp", "p->kp", "this->kp", "get()",
                       "get()(3)", "make<int>()", "static_cast<K>(p)", "[] { return k; }()",
                       "[&]() mutable -> K { return k; }()", "holders[i].kp"):
            with self.subTest(kernel=kernel):
                self.assertEqual(self.kernel_of(f"x = 1; {kernel}<<<g, b>>>(d);\n"), call_once(kernel))

    def test_what_comes_before_the_postfix_expression_stays_outside(self):
        cases = {
            "(void)k<<<1, 2>>>(d);": "(void)" + LAUNCHER,
            "(void)(k)<<<1, 2>>>(d);": "(void)" + LAUNCHER,
            "if (c) (k)<<<1, 2>>>(d);": "if (c) " + LAUNCHER,
            "for (i = 0; i < n; ++i) (k)<<<1, 2>>>(d);": "for (i = 0; i < n; ++i) " + LAUNCHER,
            "if (c) { x(); } (k)<<<1, 2>>>(d);": "if (c) { x(); } " + LAUNCHER,
            "return k<<<1, 2>>>(d), 0;": "return " + LAUNCHER,
            "c ? k1<<<1, 2>>>(d) : k2<<<1, 2>>>(d);": "c ? " + LAUNCHER,
            "*kp<<<1, 2>>>(d);": "*" + LAUNCHER,  # nvcc: '*' applies to the launch (void): an error
        }
        for src, start in cases.items():
            with self.subTest(src=src):
                self.assertTrue(body(src + "\n").startswith(start))
        self.assertEqual(body("c ? k1<<<1, 2>>>(d) : k2<<<1, 2>>>(d);\n").count(LAUNCHER), 2)

    def test_no_kernel_before_the_launch(self):
        for src in ("<<<1, 2>>>(d);\n", "x = (<<<1, 2>>>(d));\n", "return<<<1, 2>>>(d);\n"):
            with self.subTest(src=src), self.assertRaises(rewrite.RewriteError):
                body(src)


class MacroTest(unittest.TestCase):
    def test_launch_in_a_define_body(self):
        out = body("#define LAUNCH(k, n) k<<<((n) + 255) / 256, 256>>>(d, n)\nLAUNCH(scan, 10);\n")
        self.assertEqual(out, f"#define LAUNCH(k, n) {LAUNCHER}{call('k')}, {config('((n) + 255) / 256, 256')}, "
                              "d, n)\nLAUNCH(scan, 10);\n")

    def test_define_on_several_lines_keeps_its_continuations(self):
        src = "#define L(k, g) \\\n  k<<<g, \\\n     32>>>\\\n  (d)\nL(a, 1);\n"
        out = body(src)
        self.assertEqual(out.count("\n"), src.count("\n"))
        self.assertEqual(out.split("\n")[4], "L(a, 1);")
        self.assertTrue(all(line.endswith("\\") for line in out.split("\n")[:3]))
        self.assertIn(config("g, \\\n     32"), out)

    def test_define_with_windows_line_endings(self):
        src = "#define L(k) \\\r\n  k<<<1, \\\r\n  2>>>(d)\r\nL(a);\r\n"
        out = body(src)
        self.assertIn(config("1, \\\r\n  2"), out)
        self.assertTrue(out.endswith("L(a);\r\n"))

    def test_token_pasting_names_the_kernel(self):
        self.assertIn(call("scan_ ## s"), body("#define L(s) scan_ ## s<<<1, 2>>>(d)\n"))
        self.assertIn(call("scan_##s"), body("#define L(s) scan_##s<<<1, 2>>>(d)\n"))

    def test_define_that_ends_with_the_configuration(self):
        # `#define L k<<<1, 2>>>` used as `L(d)`: the arguments come at the use
        out = body("#define L k<<<1, 2>>>\n#define M(kk) kk<<<1, \\\n  2>>\\\n>\nL(d); M(k)(d);\n")
        self.assertIn(f"#define L ::scangrade::emu::detail::pending_launch(__FILE__, __LINE__, {call('k')}, "
                      f"{config('1, 2')})\n", out)
        continued = config("1, \\\n  2")
        self.assertIn(continued + ")\\\n\nL(d); M(k)(d);", out)

    def test_incomplete_launch_in_a_define_is_left_alone(self):
        src = "#define OPEN <<<\n#define CLOSE >>>\n#define CFG(g) <<<g, 32>>>\n"
        self.assertEqual(body(src), src)

    def test_comma_that_splits_a_macro_argument_is_an_error(self):
        # nvcc: macro "CHECK" passed 2 arguments, but takes just 1
        for launch in ("k<<<1, 32>>>(d)", "k<int, 4><<<1>>>(d)"):
            with self.subTest(launch=launch), self.assertRaises(rewrite.RewriteError) as ctx:
                body(f"#define CHECK(x) x\n\nCHECK({launch});\n")
            self.assertEqual(ctx.exception.line, 3)
            self.assertIn("CHECK", str(ctx.exception))

    def test_protected_or_comma_free_macro_arguments_are_rewritten(self):
        for src in ("#define CHECK(x) x\nCHECK((k<<<1, 32>>>(d)));\n", "#define CHECK(x) x\nCHECK(k<<<1>>>(d, n));\n",
                    "#define RUN(...) __VA_ARGS__\nRUN(k<<<1, 32>>>(d));\n",
                    "#define RUN(fmt, ...) f(fmt, __VA_ARGS__)\nRUN(s, k<<<1, 32>>>(d));\n",
                    "#define CHECK(x) x\n#undef CHECK\nCHECK(k<<<1, 32>>>(d));\n",
                    "CHECK(k<<<1, 32>>>(d));\n"):  # a macro the rewriter never saw: not checked
            with self.subTest(src=src):
                self.assertIn(LAUNCHER, body(src))

    def test_launch_in_the_named_argument_of_a_variadic_macro_is_an_error(self):
        with self.assertRaises(rewrite.RewriteError):
            body("#define RUN(x, ...) x\nRUN(k<<<1, 32>>>(d), 1);\n")

    def test_macro_from_a_local_header(self):
        with tempfile.TemporaryDirectory() as tmp:
            Path(tmp, "check.h").write_text("#pragma once\n#define CUDA_CHECK(call) call\n")
            src = Path(tmp, "scan.cu")
            src.write_text('#include "check.h"\nvoid f(int* d) {\n  CUDA_CHECK(k<<<1, 32>>>(d));\n}\n')
            result = subprocess.run([sys.executable, str(Path(rewrite.__file__)), str(src), str(Path(tmp) / "o.cpp")],
                                    capture_output=True, text=True, timeout=60)
            self.assertEqual(result.returncode, 1)
            self.assertIn(f"{src}:3: error:", result.stderr)
            self.assertIn("CUDA_CHECK", result.stderr)


class PreprocessorTest(unittest.TestCase):
    def test_if_zero_groups_are_skipped(self):
        src = "#if 0\nk<<<1, 2(d; it's unfinished\n#else\nk<<<1, 2>>>(d);\n#endif\n"
        out = body(src)
        self.assertIn("k<<<1, 2(d; it's unfinished", out)
        self.assertEqual(out.count(LAUNCHER), 1)

    def test_else_after_if_one_is_skipped(self):
        src = "#if 1 // on\nk<<<1, 2>>>(d);\n#elif X\nk<<<1, 2(d;\n#else\nk<<<\n#endif\n"
        self.assertEqual(body(src).count(LAUNCHER), 1)

    def test_nested_conditionals_in_a_skipped_group(self):
        src = "#if 0\n#ifdef X\n#else\nk<<<\n#endif\nk<<<\n#endif\nk<<<1, 2>>>(d);\n"
        self.assertEqual(body(src).count(LAUNCHER), 1)

    def test_other_conditionals_are_rewritten_on_every_branch(self):
        src = "#ifdef __CUDACC__\nk<<<1, 2>>>(d);\n#else\nk<<<3, 4>>>(d);\n#endif\n"
        self.assertEqual(body(src).count(LAUNCHER), 2)


class RegistrationTest(unittest.TestCase):
    """Kernel definitions register their address for cudaLaunchKernel((void*)kernel, ...)."""

    REGISTERED = "(void)&::scangrade::emu::detail::kernel_registered<static_cast<void (*)("

    def registration(self, src: str) -> str | None:
        out = body(src)
        if self.REGISTERED not in out:
            return None
        start = out.index(self.REGISTERED) + len(self.REGISTERED)
        return out[start:out.index(">;", start)]

    def test_kernel(self):
        self.assertEqual(self.registration("__global__ void k(int* d, int n) { d[0] = n; }\n"),
                         "int* d, int n)>(&k)")

    def test_specifiers_attributes_and_namespaces(self):
        src = ("namespace a { extern \"C\" { static __global__ void __launch_bounds__(256, 2) "
               "k(const float* __restrict__ in, float* out = nullptr) {} } }\n")
        self.assertEqual(self.registration(src), "const float* __restrict__ in, float* out)>(&k)")

    def test_template_kernels(self):
        cases = {
            "template <class T, int N = 4> __global__ void k(T* d) {}": "T* d)>(&k<T, N>)",
            "template <typename... Ts> __global__ void k(Ts... xs) {}": "Ts... xs)>(&k<Ts...>)",
            "template <template <class> class Op, class T> __global__ void k(T* d, Op<T> op) {}":
                "T* d, Op<T> op)>(&k<Op, T>)",
            "template <> __global__ void k<float, 2>(float* d) {}": "float* d)>(&k<float, 2>)",
        }
        for src, expected in cases.items():
            with self.subTest(src=src):
                self.assertEqual(self.registration(src + "\n"), expected)

    def test_lines_are_preserved(self):
        src = "__global__ void k(int* d,\n                  int n) {\n  d[0] = n;\n}\nafter;\n"
        out = body(src)
        self.assertEqual(out.count("\n"), src.count("\n"))
        self.assertEqual(out.split("\n")[4], "after;")

    def test_what_is_left_alone(self):
        for src in ("__global__ void k(int* d);",                              # a declaration
                    "struct S { static __global__ void k(int* d) {} };",       # a member
                    "__global__ void k(int k) {}",                             # a parameter hides the kernel
                    "template <class> __global__ void k(int* d) {}",           # an unnamed template parameter
                    "template <class T, std::enable_if_t<true, int> = 0> __global__ void k(T* d) {}",
                    "__global__ void NAME(scan, 2)(int* d) {}",                # a name made by a macro
                    "#define K(name) __global__ void name(int* d) {}"):
            with self.subTest(src=src):
                self.assertIsNone(self.registration(src + "\n"))


SITE = "__sg_shift"


class ShiftTest(unittest.TestCase):
    """Shifts in device code: the same operator with a shift_site after it (scangrade/emu_shift.h)."""

    def test_device_function_shifts_are_marked(self):
        out = body("__device__ unsigned mask(unsigned lanes) { return (1u << lanes) - 1u; }\n")
        self.assertIn(f"(1u << {SITE} << lanes) - 1u", out)
        out = body("__global__ void k(int* d, int n) { d[0] = d[1] >> n; d[2] <<= n; d[3] >>= n + 1; }\n")
        self.assertIn(f"d[1] >> {SITE} >> n;", out)
        # compound assignments are left alone: their left operand may be a bit-field
        self.assertIn("d[2] <<= n; d[3] >>= n + 1;", out)

    def test_precedence_is_kept(self):
        # i >> 16 + i >> 8 is (i >> (16 + i)) >> 8: the mark follows each operator, nothing moves
        out = body("__device__ int pad(int i) { return i >> 16 + i >> 8; }\n")
        self.assertIn(f"return i >> {SITE} >> 16 + i >> 8;", out)

    def test_host_code_and_small_literal_counts_are_left_alone(self):
        src = "int host(int a, int n) { return a << n; }\n__device__ int f(int a) { return (a << 3) + (a >> 31); }\n"
        self.assertEqual(body(src), src)

    def test_template_closers_operators_and_launch_configurations_are_left_alone(self):
        src = ("__device__ int g(int n) { Box<Box<int>> b; return sizeof(b) + W<W<1>::value>::value; }\n"
               "struct S { __device__ S& operator<<(int) { return *this; } };\n")
        self.assertEqual(body(src), src)
        # a launch in device code (dynamic parallelism): its configuration is the launch's
        out = body("__global__ void p(int* d, int n) { k<<<n >> 5, 32>>>(d, n); }\n")
        self.assertIn("launch_config(n >> 5, 32)", out)

    def test_a_comparison_before_a_shift_is_left_alone(self):
        # `i < n >> 1` could open template arguments: not marked (the CPU's value, as before)
        src = "__device__ int f(int i, int n) { return i < n >> 1; }\n"
        self.assertEqual(body(src), src)

    def test_function_like_macros_are_marked_object_like_macros_not(self):
        out = body("#define PAD(n) ((n) >> BANKS + (n) >> LOG)\n#define MASK ((1 << LOG) - 1)\n")
        self.assertIn(f"#define PAD(n) ((n) >> {SITE} >> BANKS + (n) >> {SITE} >> LOG)", out)
        self.assertIn("#define MASK ((1 << LOG) - 1)", out)

    def test_shared_sizes_and_launch_configurations_are_left_alone(self):
        out = body("__global__ void k(int* d, int n) { __shared__ int s[N + (N >> LOG)]; s[0] = d[0] >> n; }\n")
        self.assertIn("N + (N >> LOG)", out)
        self.assertIn(f"d[0] >> {SITE} >> n", out)

    def test_lines_are_preserved(self):
        src = "__device__ int f(int a,\n int n) {\n return a\n <<\n n; }\n"
        self.assertEqual(body(src).count("\n"), src.count("\n"))


class CommandLineTest(unittest.TestCase):
    def test_error_message_names_file_and_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / "bad.cu"
            src.write_text("void f() {\n  k<<<1, 1>>>;\n}\n")
            result = subprocess.run([sys.executable, str(Path(rewrite.__file__)), str(src), str(Path(tmp) / "o.cpp")],
                                    capture_output=True, text=True, timeout=60)
            self.assertEqual(result.returncode, 1)
            self.assertIn(f"{src}:2: error:", result.stderr)

    def test_header_with_a_kernel_is_rewritten(self):
        with tempfile.TemporaryDirectory() as tmp:
            Path(tmp, "kernels.cuh").write_text("__global__ void k(int* d) { d[0] = 1; }\n")
            src = Path(tmp, "scan.cu")
            src.write_text('#include "kernels.cuh"\n')
            out = Path(tmp, "out", "scan.cpp")
            result = subprocess.run([sys.executable, str(Path(rewrite.__file__)), str(src), str(out)],
                                    capture_output=True, text=True, timeout=60)
            self.assertEqual(result.returncode, 0, result.stderr)
            copies = list(Path(tmp, "out").glob("kernels.*.cuh"))
            self.assertEqual(len(copies), 1)
            self.assertIn("kernel_registered", copies[0].read_text())

    def test_help(self):
        result = subprocess.run([sys.executable, str(Path(rewrite.__file__)), "--help"], capture_output=True,
                                text=True, timeout=60)
        self.assertEqual(result.returncode, 0)
        self.assertIn("__shared__", result.stdout)


# ---- the host compiler accepts exactly what nvcc accepts ------------------------------------------

PARITY_PRELUDE = r"""
#include <cuda_runtime.h>
__global__ void k(int* d, int n) { if (d) d[0] = n; }
__global__ void k2(int* d, int n) { if (d) d[0] = n; }
template <class T, int N> __global__ void kt(T* d, int n) { if (d) d[0] = n + N; }
template <class T> struct Op { T v; };
template <class O, int N> __global__ void ko(int* d, O o) { if (d) d[0] = N; }
template <class O> __global__ void ko1(int* d, O o) { if (d) d[0] = 1; }
namespace ns { template <class T> __global__ void kn(T* d, int n) { if (d) d[0] = n; } }
template <int V> struct W { static const int value = V; };
template <class T> T tf(int x) { return T(x); }
struct S { void (*kp)(int*, int); };
void (*get())(int*, int) { return k; }
void hf(int*, int) {}
"""

# (name, nvcc accepts it, code at namespace scope after PARITY_PRELUDE); verdicts measured with
# `nvcc -arch=sm_90 -cuda` 13.0. Code inside f() sees: int* d, int a, int b, bool flag, cudaStream_t s.
PARITY_CASES = [
    ("plain", True, "void f(int* d) { k<<<1, 32>>>(d, 1); }"),
    ("visual_studio_spacing", True, "void f(int* d) { k << <1, 32 >> > (d, 1); }"),
    ("comments_between", True, "void f(int* d) { k <</*x*/< 1, 32 >>/*y*/>(d, 1); }"),
    ("tabs_between", True, "void f(int* d) { k <<\t \t< 1, 32 >> \t > (d, 1); }"),
    ("line_break_closing", True, "void f(int* d) { k <<< 1, 32 >>\n> (d, 1); }"),
    ("line_break_before_arguments", True, "void f(int* d) { k<<<1,32>>>\n(d,1); }"),
    ("line_breaks_everywhere_else", True, "void f(int* d) { k\n<<<\n1\n,\n32\n>>>\n(\nd\n,\n1\n)\n; }"),
    ("line_splice_in_opening", True, "void f(int* d) { k<<\\\n<1, 32>>>(d, 1); }"),
    ("line_break_in_opening", False, "void f(int* d) { k <<\n< 1, 32 >>> (d, 1); }"),
    ("line_comment_in_opening", False, "void f(int* d) { k << // c\n< 1, 32 >>>(d, 1); }"),
    ("block_comment_with_line_break_in_opening", False, "void f(int* d) { k <</*x\n*/< 1, 32 >>>(d, 1); }"),
    ("lt_ltlt", False, "void f(int* d) { k < << 1, 32 > >> (d, 1); }"),
    ("lt_lt_lt", False, "void f(int* d) { k < < < 1, 32 > > > (d, 1); }"),
    ("gt_gtgt", False, "void f(int* d) { k<<<1, 32> >>(d,1); }"),
    ("gt_gt_gt", False, "void f(int* d) { k<<<1, 32> > >(d,1); }"),
    ("gtgt_gtgt", False, "void f(int* d) { k<<<1, 32 >> >>(d,1); }"),
    ("gtgtgtgt", False, "void f(int* d) { k<<<1, W<32>::value>>>>(d,1); }"),
    ("shift_in_configuration", True, "void f(int* d) { k<<<64 >> 1, 32>>>(d,1); k<<<(64 >> 1), 32>>>(d,1); }"),
    ("comparisons_in_configuration", True,
     "void f(int* d, int a, int b) { k<<<dim3(a<b ? 1 : 2), 256>>>(d,1); k<<<a > 1 ? 2 : 1, 32>>>(d,1); "
     "k<<<a < 1 ? 2 : 1, 32>>>(d,1); }"),
    ("templates_in_configuration", True,
     "void f(int* d) { k<<<tf<int>(3), 32>>>(d,1); k<<<1, W<32>::value>>>(d,1); "
     "k<<<1, W<W<32>::value>::value>>>(d,1); k<<<W<W<1>::value>::value, 32>>>(d,1); "
     "k<<<1, W<64>::value >> 1 >> >(d,1); }"),
    ("braces_and_lambda_in_configuration", True,
     "void f(int* d) { k<<<dim3{1,1,1}, {32,1,1}>>>(d,1); k<<<[]{return 1;}(), 32>>>(d,1); }"),
    ("grid_only", True, "void f(int* d) { k<<<1>>>(d,1); }"),
    ("empty_configuration", False, "void f(int* d) { k<<<>>>(d,1); }"),
    ("five_configuration_arguments", False, "void f(int* d, cudaStream_t s) { k<<<1,32,0,s,5>>>(d,1); }"),
    ("no_arguments", False, "void f(int* d) { k<<<1, 32>>>; }"),
    ("launch_of_an_integer", False, "void f(int a, int b) { int x = a <<< b; }"),
    ("function_pointers", True,
     "void f(int* d, int a, bool flag) { void (*kp)(int*, int) = k; kp<<<1,32>>>(d,1); "
     "auto kq = flag ? k : k2; kq<<<1,32>>>(d,1); void (*t[2])(int*, int) = {k, k2}; t[a]<<<1,32>>>(d,1); "
     "(k)<<<1,32>>>(d,1); (flag ? k : k2)<<<1,32>>>(d,1); get()<<<1,32>>>(d,1); (*kp)<<<1,32>>>(d,1); "
     "S s1{k}; s1.kp<<<1,32>>>(d,1); S* ps = &s1; ps->kp<<<1,32>>>(d,1); []{ return k; }()<<<1,32>>>(d,1); }"),
    ("dereference_outside_the_launch", False,
     "void f(int* d) { void (*kp)(int*, int) = k; *kp<<<1,32>>>(d,1); }"),
    ("template_kernels", True,
     "void f(int* d) { kt<int, 4><<<1,32>>>(d,1); kt<int, 2 * 2><<<1,32>>>(d,1); "
     "ko<Op<int>, 8><<<1,32>>>(d, Op<int>{}); ko1<Op<int>><<<1,32>>>(d, Op<int>{}); "
     "ns::kn<int><<<1,32>>>(d,1); ::k<<<1,1>>>(d,1); kt<int, (3>2)><<<1,32>>>(d,1); kt<int, 1 < 2><<<1,32>>>(d,1); "
     "kt<int, 4> <<<1,32>>> (d,1); }"),
    ("statement_contexts", True,
     "void f(int* d, bool flag) { (void)k<<<1,1>>>(d,1); (void)(k)<<<1,1>>>(d,1); if (flag) (k)<<<1,1>>>(d,1); "
     "flag ? k<<<1,1>>>(d,1) : k2<<<1,1>>>(d,2); k<<<1,1>>>(d,1), k<<<1,1>>>(d,2); "
     "auto g = [&]{ k<<<1,1>>>(d,1); }; g(); k<<<1, 1>>>((k2<<<1,1>>>(d, 2), d), 1); }"),
    ("return_launch", True, "void f(int* d) { return k<<<1,1>>>(d,1), (void)0; }"),
    ("operator_shift_specialization", True,
     "template<class T> struct X; template<class T> int operator<<(int, const X<T>&); "
     "template<class T> struct X { friend int operator<< <T>(int, const X<T>&); }; "
     "template<class T> struct Y; template<class T> int operator<<(int, const Y<T>&); "
     "template<class T> struct Y { friend int operator<<<T>(int, const Y<T>&); };"),
    ("launch_in_define", True,
     "#define LAUNCH_A(kk, n) kk<<<((n)+255)/256, 256>>>(d, n)\n"
     "#define LAUNCH_B(kk, n) \\\n  kk<<<((n)+255)/256, \\\n       256>>>(d, n)\n"
     "#define LAUNCH_C(s) k##s<<<1, 1>>>(d, 1)\n"
     "void f(int* d) { LAUNCH_A(k, 10); LAUNCH_B(k2, 3); LAUNCH_C(2); }"),
    ("define_without_the_arguments", True,
     "#define LAUNCH_D k<<<1, 32>>>\n#define LAUNCH_E(kk) kk<<<1, 32>>>\n"
     "void f(int* d) { LAUNCH_D(d, 1); LAUNCH_E(k2)(d, 2); }"),
    ("macros_in_the_launch", True,
     "#define CFG_A 1, 32\n#define KERN_A k\nvoid f(int* d) { KERN_A<<<CFG_A>>>(d, 1); }"),
    ("macro_arguments_that_stay_whole", True,
     "#define CHECK_A(x) do { x; cudaGetLastError(); } while (0)\n#define VAR_A(...) __VA_ARGS__\n"
     "void f(int* d) { CHECK_A((k<<<1, 32>>>(d, 1))); CHECK_A(k<<<1>>>(d, 1)); VAR_A(k<<<1, 32>>>(d, 1)); "
     "VAR_A(kt<int, 4><<<1, 32>>>(d, 1)); }"),
    ("macro_argument_split_by_the_configuration", False,
     "#define CHECK_B(x) do { x; } while (0)\nvoid f(int* d) { CHECK_B(k<<<1, 32>>>(d, 1)); }"),
    ("macro_argument_split_by_template_arguments", False,
     "#define CHECK_C(x) do { x; } while (0)\nvoid f(int* d) { CHECK_C(kt<int, 4><<<1>>>(d, 1)); }"),
    ("skipped_group", True, "#if 0\n k<<<1, 32(d; 'x \n#endif\nvoid f(int* d) { k<<<1, 1>>>(d, 1); }"),
    ("launch_api", True,
     "void f(int* d, int a, cudaStream_t s) { void* args[] = {&d, &a}; "
     "cudaLaunchKernel((void*)k, dim3(1), dim3(32), args, 0, s); cudaLaunchKernel((const void*)k, 1, 32, args); "
     "cudaLaunchKernel(k, dim3(1), dim3(32), args, 0, s); cudaLaunchKernel(kt<int,4>, 1, 32, args); "
     "cudaLaunchKernel((void*)kt<int,4>, 1, 32, args); "
     "cudaLaunchConfig_t cfg = {}; cfg.gridDim = 1; cfg.blockDim = 32; cfg.dynamicSmemBytes = 0; cfg.stream = s; "
     "cfg.attrs = nullptr; cfg.numAttrs = 0; cudaLaunchKernelEx(&cfg, k, d, 1); "
     "cudaLaunchKernelEx(&cfg, kt<int, 4>, d, 1); "
     "cudaLaunchKernelExC(&cfg, (const void*)k, args); "
     "cudaFuncAttributes fa; cudaFuncGetAttributes(&fa, k); cudaFuncGetAttributes(&fa, (const void*)k); "
     "(void)fa.maxThreadsPerBlock; (void)fa.sharedSizeBytes; (void)fa.numRegs; }"),
    ("launch_kernel_ex_with_too_few_arguments", False,
     "void f(int* d) { cudaLaunchConfig_t cfg = {}; cudaLaunchKernelEx(&cfg, k, d); }"),
    # every extern __shared__ array of one name in a namespace is one entity of one type, wherever and
    # in whichever instantiation it is declared (nvcc: "declaration is incompatible with previous")
    ("extern_shared_template_two_types", False,
     "template <class T> __global__ void kx(T* d) { extern __shared__ T part[]; part[0] = d[0]; }\n"
     "void f(int* a, float* b) { kx<<<1, 32, 128>>>(a); kx<<<1, 32, 128>>>(b); }"),
    ("extern_shared_template_two_types_of_one_size", False,
     "template <class T> __global__ void kx(T* d) { extern __shared__ T part[]; part[0] = d[0]; }\n"
     "void f(int* a, unsigned* b) { kx<<<1, 32, 128>>>(a); kx<<<1, 32, 128>>>(b); }"),
    ("extern_shared_template_explicit_instantiations", False,
     "template <class T> __global__ void kx(T* d) { extern __shared__ T part[]; part[0] = d[0]; }\n"
     "template __global__ void kx<int>(int*);\ntemplate __global__ void kx<float>(float*);"),
    ("extern_shared_template_one_type", True,
     "template <class T> __global__ void kx(T* d) { extern __shared__ T part[]; part[0] = d[0]; }\n"
     "__global__ void ky(int* d) { extern __shared__ int part[]; part[0] = d[0]; }\n"
     "void f(int* a, int* b) { kx<<<1, 32, 128>>>(a); kx<<<1, 32, 128>>>(b); ky<<<1, 32, 128>>>(a); }"),
    ("extern_shared_template_never_instantiated", True,
     "template <class T> __global__ void kx(T* d) { extern __shared__ T part[]; part[0] = d[0]; }\n"
     "__global__ void ky(float* d) { extern __shared__ float part[]; part[0] = d[0]; }"),
    ("extern_shared_template_of_bytes", True,  # the usual fix: one byte array, cast to T*
     "template <class T> __global__ void kx(T* d) { extern __shared__ unsigned char raw[]; "
     "T* part = reinterpret_cast<T*>(raw); part[0] = d[0]; }\n"
     "void f(int* a, float* b) { kx<<<1, 32, 128>>>(a); kx<<<1, 32, 128>>>(b); }"),
    ("extern_shared_two_kernels_two_types", False,
     "__global__ void kx(int* d) { extern __shared__ int part[]; part[0] = d[0]; }\n"
     "__global__ void ky(float* d) { extern __shared__ float part[]; part[0] = d[0]; }"),
    ("extern_shared_device_function_and_kernel_two_types", False,
     "__device__ void g(int* d) { extern __shared__ int part[]; part[0] = d[0]; }\n"
     "__global__ void ky(float* d) { extern __shared__ float part[]; part[0] = d[0]; }"),
    ("extern_shared_two_kernels_int_and_volatile_int", False,
     "__global__ void kx(int* d) { extern __shared__ int part[]; part[0] = d[0]; }\n"
     "__global__ void ky(int* d) { extern __shared__ volatile int part[]; part[0] = d[0]; }"),
    ("extern_shared_one_type_in_several_kernels", True,
     "typedef int word;\n"
     "__global__ void kx(int* d) { extern __shared__ int part[]; part[0] = d[0]; }\n"
     "__global__ void ky(int* d) { extern __shared__ signed int part[]; part[0] = d[0]; }\n"
     "__global__ void kz(int* d) { extern __shared__ word part[]; part[0] = d[0]; }\n"
     "__global__ void kf(float* d) { extern __shared__ float fpart[]; fpart[0] = d[0]; }\n"
     "__global__ void kg(float* d) { extern __shared__ float fpart[]; fpart[0] = d[0]; }"),
    ("extern_shared_different_names_different_types", True,
     "__global__ void kx(int* d) { extern __shared__ int ipart[]; ipart[0] = d[0]; }\n"
     "__global__ void ky(float* d) { extern __shared__ float fpart[]; fpart[0] = d[0]; }"),
    ("extern_shared_one_name_in_two_namespaces", True,
     "namespace a { __global__ void kx(int* d) { extern __shared__ int part[]; part[0] = d[0]; } }\n"
     "namespace { __global__ void ky(float* d) { extern __shared__ float part[]; part[0] = d[0]; } }"),
    ("extern_shared_aligned", True,
     "__global__ void kx(char* d) { extern __shared__ __align__(16) char buf[]; buf[0] = d[0]; }\n"
     "__global__ void ky(char* d) { extern __shared__ char buf[]; buf[0] = d[0]; }"),
    ("extern_shared_file_scope_redeclared_in_a_kernel", True,
     "extern __shared__ int sg_file_part[];\n"
     "__global__ void kx(int* d) { sg_file_part[0] = d[0]; }\n"
     "__global__ void ky(int* d) { extern __shared__ int sg_file_part[]; sg_file_part[0] = d[0]; }"),
    ("extern_shared_file_scope_redeclared_with_another_type", False,
     "extern __shared__ int sg_file_part2[];\n"
     "__global__ void ky(float* d) { extern __shared__ float sg_file_part2[]; sg_file_part2[0] = d[0]; }"),
    # shifts in device code go through scangrade/emu_shift.h: every form still compiles
    ("shifts_of_every_integer_type", True,
     "enum Bits { kLow = 1 };\n"
     "__device__ long long shifts(int i, unsigned u, long long l, unsigned long long ul, bool b, char c,\n"
     "                            unsigned short us, Bits e, int n, unsigned long long un) {\n"
     "  return (i << n) + (u >> n) + (l << un) + (long long)(ul >> n) + (b << n) + (c >> n) + (us << n)\n"
     "         + (e << n) + (i >> u) + (l >> (n + 1)) + (1 << n << n) + ((i >> n) >> n);\n"
     "}"),
    ("compound_shifts", True,
     "__device__ void compound(int* d, int n) {\n"
     "  int a = d[0]; unsigned b = d[1]; volatile int c = d[2]; long long l = 1;\n"
     "  a <<= n; b >>= n + 1; c <<= n; l <<= n; a >>= b; d[0] = a + (int)b + c + (int)l;\n"
     "  for (int s = 16; s > 0; s >>= 1) d[s] = s; d[1] <<= n; d[2] = (a <<= n) >> n;\n"
     "}"),
    ("shifts_of_bit_fields", True,
     "struct Packed { unsigned v : 4; int w : 7; };\n"
     "__device__ int bit_fields(Packed p, int n) {\n"
     "  p.v <<= n; p.w >>= n; unsigned x = p.v << n; return (int)x + p.w + (int)(p.v >> n) + (p.w << n);\n"
     "}"),
    ("shifts_in_constant_expressions", True,
     "template <int V> struct Vt { static constexpr int value = V; };\n"
     "__host__ __device__ constexpr int padded(int i, int log) { return i + (i >> log); }\n"
     "__global__ void kc(int* d, int n) {\n"
     "  constexpr int kLog = 5;\n"
     "  int local[1 << kLog]; local[0] = n;\n"
     "  static_assert((1 << kLog) == 32, \"a constant\");\n"
     "  switch (n) { case 1 << kLog: d[0] = local[0]; break; default: break; }\n"
     "  d[1] = Vt<(64 >> kLog)>::value + Vt<padded(64, kLog)>::value;\n"
     "  __shared__ int s[(1 << kLog) + (32 >> kLog)]; s[0] = n;\n"
     "}"),
    ("shifts_beside_templates_and_launches", True,
     "template <class T> struct Box { T v; };\n"
     "template <class T> __device__ T twice(T x) { return x << 1; }\n"
     "__global__ void kb(int* d, int n) {\n"
     "  Box<Box<int>> b{{n}};\n"
     "  d[0] = W<W<4>::value>::value >> n; d[1] = static_cast<int>(d[2]) >> n; d[2] = twice<int>(b.v.v) << n;\n"
     "  if (d[0] < n >> 1 && n > 0) d[3] = sizeof(Box<Box<char>>) << n;\n"
     "  auto f = [=](int x) { return x >> n; }; d[4] = f(n);\n"
     "}\n"
     "void host_launch(int* d, int n) { kb<<<1 << 2, 64 >> 1>>>(d, n << 1); }"),
    ("shifts_in_a_function_like_macro", True,
     "#define NUM_BANKS 16\n"
     "#define LOG_NUM_BANKS 4\n"
     "#define CONFLICT_FREE_OFFSET(n) ((n) >> NUM_BANKS + (n) >> (2 * LOG_NUM_BANKS))\n"
     "#define BANK_MASK ((1 << LOG_NUM_BANKS) - 1)\n"
     "#if BANK_MASK > 8\n"
     "#define WIDE 1\n"
     "#endif\n"
     "__global__ void km(int* d, int n) { int ai = n; ai += CONFLICT_FREE_OFFSET(ai); d[ai & BANK_MASK] = ai; }"),
    ("shift_of_a_float_is_rejected", False,
     "__device__ float bad_shift(float x, int n) { return x << n; }"),
]


def wrapped(index: int, code: str) -> str:
    return f"namespace parity_{index} {{\n{code}\n}}\n"


class CompilerParityTest(unittest.TestCase):
    """Rewritten with rewrite.py and compiled by the host compiler against the emulator's headers,
    each snippet is accepted exactly when nvcc accepts it."""

    @classmethod
    def setUpClass(cls):
        cls.cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
        if cls.cxx is None:
            raise unittest.SkipTest("no host C++ compiler")
        cls.tmp = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def compiles(self, name: str, code: str) -> tuple[bool, str]:
        """Rewrites and compiles (syntax only) one translation unit; (accepted, messages)."""
        src = Path(self.tmp.name, f"{name}.cu")
        src.write_text(PARITY_PRELUDE + code)
        out = Path(self.tmp.name, f"{name}.cpp")
        rewritten = subprocess.run([sys.executable, str(Path(rewrite.__file__)), str(src), str(out),
                                    "--runtime-header", str(EMU_INCLUDE / "cuda_runtime.h")],
                                   capture_output=True, text=True, timeout=60)
        if rewritten.returncode != 0:
            return False, rewritten.stderr
        result = subprocess.run([self.cxx, "-std=c++17", "-fsyntax-only", "-I", str(EMU_INCLUDE), str(out)],
                                capture_output=True, text=True, timeout=120)
        return result.returncode == 0, result.stderr

    def test_host_compiler_agrees_with_nvcc(self):
        accepted = [(i, name, code) for i, (name, ok, code) in enumerate(PARITY_CASES) if ok]
        rejected = [(i, name, code) for i, (name, ok, code) in enumerate(PARITY_CASES) if not ok]
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            # every accepted snippet in one translation unit; each rejected one alone
            together = pool.submit(self.compiles, "accepted", "".join(wrapped(i, c) for i, _, c in accepted))
            alone = {name: pool.submit(self.compiles, name, wrapped(i, code)) for i, name, code in rejected}
            ok, messages = together.result()
            if not ok:  # which one?
                for i, name, code in accepted:
                    one_ok, one_messages = self.compiles(name, wrapped(i, code))
                    self.assertTrue(one_ok, f"nvcc accepts {name}, the emulated build does not:\n{one_messages}")
            self.assertTrue(ok, messages)
            for name, future in alone.items():
                with self.subTest(name=name):
                    self.assertFalse(future.result()[0], f"nvcc rejects {name}, the emulated build accepts it")

    @unittest.skipUnless(os.environ.get("SCANGRADE_EMU_CHECK_NVCC") == "1", "SCANGRADE_EMU_CHECK_NVCC=1 measures nvcc")
    def test_verdicts_are_nvccs(self):
        nvcc = shutil.which("nvcc")
        if nvcc is None:
            self.skipTest("no nvcc on PATH")

        def nvcc_accepts(index: int, name: str, code: str) -> bool:
            src = Path(self.tmp.name, f"nvcc_{name}.cu")
            src.write_text(PARITY_PRELUDE + wrapped(index, code))
            result = subprocess.run([nvcc, "-arch=sm_90", "-cuda", str(src), "-o", str(src.with_suffix(".ii"))],
                                    capture_output=True, text=True, timeout=300)
            return result.returncode == 0

        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            verdicts = list(pool.map(lambda c: nvcc_accepts(c[0], c[1][0], c[1][2]), enumerate(PARITY_CASES)))
        for (name, expected, _), got in zip(PARITY_CASES, verdicts):
            with self.subTest(name=name):
                self.assertEqual(got, expected)


if __name__ == "__main__":
    unittest.main()
