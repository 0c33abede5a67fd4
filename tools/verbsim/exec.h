// verbsim exec: runs a program on the drop-in libraries (docs/cli.md).
#ifndef VERBSIM_TOOLS_VERBSIM_EXEC_H_
#define VERBSIM_TOOLS_VERBSIM_EXEC_H_

namespace verbsim::cli {

// The usage text of `verbsim exec`.
const char* ExecHelp();
// Parses argv[first..] (options, then the command) and runs the command
// with the drop-in directory first on LD_LIBRARY_PATH and the sysfs view
// preloaded (dropin/sysfs); returns the exit status to give.
int Exec(int argc, char** argv, int first);

}  // namespace verbsim::cli

#endif  // VERBSIM_TOOLS_VERBSIM_EXEC_H_
