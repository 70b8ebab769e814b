/* NVTX v3 (header-only) ranges, marks and a domain range: shown by libprof as its own
 * injection library, with no change to the program. */
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <time.h>

static void work(long us)
{
	struct timespec ts = { 0, us * 1000 };
	nanosleep(&ts, NULL);
}

int main(void)
{
	for (int i = 0; i < 3; i++) {
		nvtxRangePushA("outer");
		work(2000);
		nvtxRangePushA("inner");
		work(1000);
		nvtxRangePop();
		nvtxRangePop();
	}
	nvtxMarkA("checkpoint");
	nvtxDomainHandle_t dom = nvtxDomainCreateA("mydomain");
	nvtxEventAttributes_t a = { 0 };
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = "domain-range";
	nvtxDomainRangePushEx(dom, &a);
	work(1000);
	nvtxDomainRangePop(dom);
	nvtxRangeId_t id = nvtxRangeStartA("startend");
	work(1000);
	nvtxRangeEnd(id);
	printf("nvtx done\n");
	return 0;
}
