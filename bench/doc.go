// Command bench runs locksmith's lock benchmarks next to the server's ceiling
// and the other Go lock libraries, and reports them as a table, JSON, Markdown
// and a self-contained HTML page. See README.md in this directory for the
// workloads, the columns, the libraries' configurations and how to read the
// figures.
//
// Architecture: this binary is the orchestrator (the default mode) and also runs the cases of locksmith's own
// libraries (the "case" subcommand); the peer libraries run in the peers binary, built from bench/peers (in this
// module, which is not the library's: see go.work at the repository's root). Every case runs in its own process,
// which warms up and then hands the orchestrator the edges of its measurement window over standard input and
// output, so that the orchestrator samples the server (INFO) and the machine (/proc/stat) exactly around it; a case
// spread over processes (W2x, W4x) runs in several such processes that open and close their window at one common
// instant (workload.RunSpread). The workloads themselves live in bench/internal/workload; the report types and
// renderers in bench/internal/report.
package main
