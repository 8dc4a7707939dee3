// The cluster of a multi-process run on MPI (cluster.h; docs/scale-out.md): `mpirun -np P
// detrain ...` starts P processes; each joins here, and MPI moves their bytes (point to point
// only: no MPI reduction is ever used, so neither the library's algorithm choice nor P can change
// a bit).
//
// Thread safety: Join and Leave from the main thread; the cluster as cluster.h says.
#ifndef DETRAIN_RUNTIME_MPI_MPI_CLUSTER_H_
#define DETRAIN_RUNTIME_MPI_MPI_CLUSTER_H_

#include <memory>

#include "base/status.h"
#include "runtime/cluster.h"

namespace detrain::runtime::mpi {

// True when a launcher started this process (Open MPI's mpirun, or a PMI/PMIx one such as
// Slurm's srun): the environment says so. Read once; never hashed.
bool LaunchedByLauncher();

// Whether this detrain was built with MPI.
bool Available();

// Joins the processes of the run when a launcher started this one; null when none did (a
// single process). An error when a launcher started it but this detrain has no MPI, or MPI does
// not start. `timeout_seconds` bounds every wait for another rank.
Result<std::shared_ptr<Cluster>> Join(double timeout_seconds);

// Ends MPI for this process, once everything is sent (a no-op without Join).
void Leave();

}  // namespace detrain::runtime::mpi

#endif  // DETRAIN_RUNTIME_MPI_MPI_CLUSTER_H_
