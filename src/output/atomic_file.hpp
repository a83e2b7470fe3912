// Replacing a file atomically: write to a temporary name in the same directory, flush it to
// disk, then rename() it over the final name. Readers see either the old file or the complete
// new one, never a partly written one.
#pragma once

#include <string>

namespace culprit {

// A target that exists and is neither a regular file nor a directory: a character device
// (/dev/null, /dev/stdout) or a named pipe. Such a target is written into, never replaced: a
// rename over /dev/null run as root replaces the device with a regular file, which breaks
// every later `> /dev/null` on the machine.
bool is_stream_target(const std::string& path);

// "<path>.tmp.<pid>": same directory as `path`, so that rename() never crosses file systems;
// for a stream target, "nccl-culprit-<name>.tmp.<pid>" in $TMPDIR (else /tmp).
std::string temporary_name_for(const std::string& path);

// fsync()s `temp_path`, renames it to `final_path` and fsync()s the directory (best effort);
// for a stream target, copies the temporary's bytes into it and removes the temporary.
// Throws std::runtime_error naming the files when the flush, rename or copy fails; the caller
// removes the temporary.
void commit_temporary(const std::string& temp_path, const std::string& final_path);

// Removes `path` if it exists; never throws.
void remove_quietly(const std::string& path) noexcept;

}  // namespace culprit
