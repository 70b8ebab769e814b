/* An MPI job with known, unequal work: rank r spins for (r + 1) * UNIT_MS of CPU time and
 * holds (r + 1) MiB at its peak; then every rank calls MPI_Allreduce on 1000 doubles and
 * MPI_Barrier once, exchanges 100 ints with its neighbours (MPI_Isend, MPI_Irecv,
 * MPI_Waitall), and rank 0 sends rank 1 one message of 400 bytes (MPI_Send, MPI_Recv). */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define UNIT_MS 150

static double cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);

	size_t mib = (size_t)(rank + 1) << 20;
	char *volatile block = malloc(mib);
	memset(block, 1, mib);
	free(block);
	double until = cpu_ms() + (rank + 1) * UNIT_MS;
	volatile unsigned long spin = 0;
	while (cpu_ms() < until)
		spin++;

	double in[1000], out[1000];
	for (int i = 0; i < 1000; i++)
		in[i] = rank;
	MPI_Allreduce(in, out, 1000, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	MPI_Barrier(MPI_COMM_WORLD);

	int sendbuf[100] = { 0 }, recvbuf[100];
	MPI_Request req[2];
	MPI_Isend(sendbuf, 100, MPI_INT, (rank + 1) % size, 1, MPI_COMM_WORLD, &req[0]);
	MPI_Irecv(recvbuf, 100, MPI_INT, (rank + size - 1) % size, 1, MPI_COMM_WORLD, &req[1]);
	MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
	if (rank == 0 && size > 1)
		MPI_Send(sendbuf, 100, MPI_INT, 1, 2, MPI_COMM_WORLD);
	else if (rank == 1)
		MPI_Recv(recvbuf, 100, MPI_INT, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Finalize();
	return out[0] == size * (size - 1) / 2 ? 0 : 1;
}
