# SPDX-License-Identifier: BSD-3-Clause
# metakernel_python: a Python kernel built on metakernel, the way upstream's metakernel_python is
# (Debian packages metakernel, the base class, but none of its Python kernels). Run with
# `python3 metakernel_python.py -f CONNECTION_FILE`.
from metakernel import ExceptionWrapper, MetaKernel


class MetaKernelPython(MetaKernel):
    implementation = "MetaKernel Python"
    implementation_version = "1.0"
    language = "python"
    language_version = "3"
    banner = "MetaKernel Python - evaluates Python statements and expressions"
    language_info = {"mimetype": "text/x-python", "name": "python", "file_extension": ".py",
                     "help_links": MetaKernel.help_links}

    def get_usage(self):
        return "This is MetaKernel Python. It evaluates Python code with metakernel's %python magic."

    def set_variable(self, name, value):
        self.line_magics["python"].env[name] = value

    def get_variable(self, name):
        return self.line_magics["python"].env.get(name)

    def do_execute_direct(self, code):
        try:
            return self.line_magics["python"].eval(code.strip())
        except KeyboardInterrupt:
            # MetaKernel lets it reach ipykernel, which drops the request unanswered ("KeyboardInterrupt
            # caught in kernel"); ProcessMetaKernel catches it too. Report it as the cell's error.
            return ExceptionWrapper("KeyboardInterrupt", "interrupted", ["KeyboardInterrupt"])

    def get_completions(self, info):
        return self.line_magics["python"].get_completions(info)

    def get_kernel_help_on(self, info, level=0, none_on_fail=False):
        return self.line_magics["python"].get_help_on(info, level, none_on_fail)


if __name__ == "__main__":
    MetaKernelPython.run_as_main()
