// The Vulkan device vkml computes on: instance, device and queue, created on first use, and the
// stream of work sent to it.
//
// Execution: ops are recorded into a command buffer as they are called (their errors are raised
// at the call: everything that can fail is checked while recording, but for the values only the
// device sees, such as an index out of range: deferred errors, below) and submitted in batches:
// when a batch holds kBatch dispatches, when the host reads a buffer the batch writes, and on
// synchronize(). Barriers go only between commands with a hazard (one reads or writes what an
// earlier one of the batch wrote, or writes what it read). Up to kFrames batches are in flight
// while the next one records; the host waits only for the batch whose results it reads. Memory a
// batch still uses is reused only once that batch has completed (allocator.h).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_set>

#include "vkml/backend/vulkan/allocator.h"
#include "vkml/backend/vulkan/loader.h"

namespace vk::vulkan {

// How many workgroups a dispatch runs along x, y and z.
struct Groups {
  uint32_t x = 1, y = 1, z = 1;
};

// A compute pipeline over `bindings` storage buffers (binding i = buffer i) and push constants.
struct Pipeline {
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  uint32_t bindings = 0;
  uint32_t push_bytes = 0;
};

// What the stream has done since the process started (tests count host <-> device traffic).
struct StreamStats {
  uint64_t submissions = 0, dispatches = 0, barriers = 0;
  uint64_t host_to_device = 0, device_to_host = 0;  // copies, and their bytes
  uint64_t host_to_device_bytes = 0, device_to_host_bytes = 0;
  uint64_t staged = 0;      // of those copies, the ones through a staging range
  uint64_t host_waits = 0;  // times the host blocked on the device (fence waits)
};

class Context final : public BlockSource {
 public:
  static constexpr uint32_t kBatch = 64;       // dispatches per submission at most
  static constexpr size_t kFrames = 3;         // batches in flight at most
  static constexpr uint32_t kMaxBindings = 8;  // storage buffers per pipeline at most

  // The context, created on the first call; null when this machine has no usable Vulkan device
  // (unavailable_reason() says why). Thread-safe.
  static Context* get();
  static const std::string& unavailable_reason();

  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  ~Context() override;

  const std::string& device_name() const { return device_name_; }
  // What the shaders may use on this device (each enabled at creation where supported).
  bool has_float64() const { return has_float64_; }
  bool has_int64() const { return has_int64_; }
  bool has_int8_storage() const { return has_int8_storage_; }
  bool has_int16_storage() const { return has_int16_storage_; }
  VkDeviceSize max_storage_range() const { return max_storage_range_; }
  // Tensor memory is never mapped (VKML_VULKAN_STAGING=1): every host copy goes through staging,
  // as on a discrete GPU without host-visible device memory, so that lavapipe tests that path.
  bool staged_only() const { return staged_only_; }
  uint32_t max_groups(int axis) const { return max_groups_[axis]; }
  // Messages the validation layers reported (VKML_VULKAN_VALIDATE=1), errors and warnings.
  int validation_messages() const;

  // Memory for a tensor (device-local, mapped when that memory is host-visible too), and its
  // return once the work recorded on it has completed.
  std::unique_ptr<Buffer> allocate(size_t nbytes);
  void release(std::unique_ptr<Buffer> b) noexcept;
  size_t memory_allocated();
  size_t memory_reserved();
  // Hands cached blocks with nothing allocated back to the driver.
  void empty_cache();

  // Host <-> buffer copies. A write waits for the work that still uses dst (none for new
  // memory); a read waits for the work that writes src.
  void upload(Buffer& dst, size_t offset, const void* src, size_t nbytes);
  void download(void* dst, Buffer& src, size_t offset, size_t nbytes);
  // Buffer -> buffer, recorded like a dispatch.
  void copy(Buffer& dst, size_t dst_offset, Buffer& src, size_t src_offset, size_t nbytes);

  // The pipeline of shader `name` (built on first use, kept, and cached on disk when a cache
  // directory is writable: VKML_CACHE_DIR, else $XDG_CACHE_HOME/vkml or ~/.cache/vkml).
  const Pipeline& pipeline(const std::string& name, std::span<const unsigned char> spirv,
                           uint32_t bindings, uint32_t push_bytes);
  // Records `p` over `buffers` with push constants `push` as groups.x * groups.y * groups.z
  // workgroups. The first `writes` buffers are those the shader writes (outputs first, by
  // convention), the rest it only reads: barriers follow from that.
  void dispatch(const Pipeline& p, std::span<Buffer* const> buffers, const void* push,
                Groups groups, uint32_t writes = 1);
  // The same over `groups` workgroups in a line, split over x and y when more than the device
  // allows in x (shaders index them as gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x).
  void dispatch(const Pipeline& p, std::span<Buffer* const> buffers, const void* push,
                uint64_t groups, uint32_t writes = 1);
  // Submits what is recorded and waits for all of it.
  void synchronize();

  // Deferred errors (vkfix): a shader that finds a bad value (an index out of range) raises it in
  // the error word instead of the host reading the value back, which would wait for the device.
  // The word is checked at the next host read (download) and at synchronize(), which raise the
  // error recorded for the launch that set it: IndexError "<op>: index <v><rest>". The launch
  // binds error_word() among its written buffers and passes the slot of expect_in_range() to the
  // shader, which sets word[0] = slot (the first to do so wins), word[1..2] = the value's low and
  // high 32 bits. The shader must clamp so that nothing is read or written out of bounds.
  Buffer& error_word();
  uint32_t expect_in_range(std::string op, std::string rest);
  // hostwait: the same for a bad value that is not an index (an integer division by zero, a class
  // out of range): the error raised is `kind` (IndexError or RuntimeError) "<op>: <message>",
  // without the value. Shaders set word[0] = slot as for expect_in_range.
  enum class ErrorKind : uint8_t { Index, Runtime };
  uint32_t expect_valid(std::string op, std::string message, ErrorKind kind);
  StreamStats stats();
  // Where pipelines are cached on disk ("" when nowhere).
  const std::string& pipeline_cache_path() const { return cache_path_; }

 private:
  // One batch: its command buffer, descriptor sets and fence.
  struct Frame {
    VkCommandPool pool = VK_NULL_HANDLE;
    VkCommandBuffer cb = VK_NULL_HANDLE;
    VkDescriptorPool descriptors = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;
    uint64_t serial = 0;  // of the batch it holds
    bool in_flight = false;
  };

  Context() = default;
  bool init(std::string& why);
  void create_frames();
  uint32_t memory_type(uint32_t allowed, VkMemoryPropertyFlags want) const;
  std::unique_ptr<Block> create_block(VkDeviceSize size, bool host) override;
  void destroy_block(Block& b) noexcept override;
  std::unique_ptr<Buffer> allocate_locked(size_t nbytes, bool host);

  // All under mutex_:
  // The command buffer being recorded (a new batch begun when none is).
  VkCommandBuffer recording();
  // A barrier first when `reads` or `writes` conflict with what the batch did since the last one.
  void order(std::span<Buffer* const> reads, std::span<Buffer* const> writes);
  void flush();                    // submits the batch being recorded, if any
  void wait_for(uint64_t serial);  // until that batch (and those before it) completed
  void poll();                     // notes the batches that have completed, without waiting
  void load_pipeline_cache();
  // The deferred error raised since the last check, if any (then after waiting for all the work,
  // so that the word is complete); forgets the checks of completed work.
  void raise_deferred();
  void save_pipeline_cache();

  Api api_;
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  VkPhysicalDeviceMemoryProperties memory_props_{};
  VkPhysicalDeviceProperties props_{};
  std::string device_name_;
  bool has_float64_ = false, has_int64_ = false, has_int8_storage_ = false,
       has_int16_storage_ = false;
  bool staged_only_ = false;
  uint32_t max_groups_[3] = {65535, 65535, 65535};
  VkDeviceSize max_storage_range_ = 0;

  std::mutex mutex_;  // the stream, the allocator and the stats
  std::array<Frame, kFrames> frames_;
  size_t current_ = 0;  // the frame being recorded, or the next to record
  bool recording_ = false;
  uint32_t batch_dispatches_ = 0;
  uint64_t last_serial_ = 0, completed_ = 0;
  std::unordered_set<const Buffer*> read_, written_;  // since the batch's last barrier
  std::unique_ptr<Allocator> allocator_;
  StreamStats stats_;
  // vkfix: deferred errors: the word (host-visible) and, per slot, the op and the error's rest
  // with the serial its launch completes by at the latest.
  struct Deferred {
    std::string op, rest;
    uint64_t serial = 0;
    bool with_value = true;  // hostwait: false: kind "<op>: <rest>" (expect_valid)
    ErrorKind kind = ErrorKind::Index;
  };
  std::unique_ptr<Buffer> error_word_;
  std::map<uint32_t, Deferred> deferred_;
  uint32_t next_slot_ = 0;

  std::mutex pipeline_mutex_;  // the pipeline map and the cache file
  std::map<std::string, std::unique_ptr<Pipeline>> pipelines_;
  VkPipelineCache pipeline_cache_ = VK_NULL_HANDLE;
  std::string cache_path_;
  size_t cache_saved_bytes_ = 0;
};

}  // namespace vk::vulkan
