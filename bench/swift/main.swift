// bgtaskd-bench: the native half of `make bench` (bench/bench.py drives it). Kept to one line: closures
// written here would be main-actor isolated (STYLE.md), so everything lives in the other files.
BenchTool.run(Array(CommandLine.arguments.dropFirst()))
