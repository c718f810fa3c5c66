#include "bench/ab/cli.hpp"

int main(int argc, char** argv) { return layerbench::ab::run_cli(argc, argv); }
