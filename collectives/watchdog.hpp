#pragma once
// The host-wait watchdog: every MPI call made through LB_MPI_CHECK marks this process as waiting
// (collectives/error.hpp). A thread checks every 100 ms; when one call has waited longer than the
// timeout (--timeout) it names the rank that holds the job up and ends this process, which makes
// mpirun end the whole job. Ranks on one machine share a board (an MPI shared-memory window): each
// rank's thread stamps a heartbeat there, so a rank that is stopped (SIGSTOP) or hung shows a
// stale heartbeat, and one that is busy outside MPI shows that it is not waiting. The thread never
// calls MPI (the library is initialised MPI_THREAD_SERIALIZED); it only reads that memory.
namespace layerbench::watchdog {

// Collective over MPI_COMM_WORLD, once, right after MPI start-up (MpiEnvironment does it).
void start(double timeout_s);
// A host wait longer than this ends the job; <= 0 turns enforcement off.
void set_timeout(double seconds);
double timeout();
// Collective; before MPI_Finalize. Joins the thread and frees the board.
void stop();

}  // namespace layerbench::watchdog
