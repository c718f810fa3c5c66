// Calls NVTX (header-only nvtx3, no GPU needed) in a fixed pattern for the injection library's test.
#include <nvtx3/nvToolsExt.h>

int main() {
  for (int i = 0; i < 3; ++i) {
    nvtxRangePushA("outer");
    nvtxRangePushA("inner");
    nvtxRangePop();
    nvtxEventAttributes_t a{};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = "ex";
    nvtxRangePushEx(&a);
    nvtxRangePop();
    nvtxRangePop();
  }
  nvtxRangePushA("left open");
  return 0;
}
