// The gpuscaler binary: parses the command line and runs a subcommand.
#include "gpuscaler/cli/cli.h"

int main(int argc, char** argv) { return gpuscaler::RunCli(argc, argv); }
