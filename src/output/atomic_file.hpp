// Replacing a file atomically: write to a temporary name in the same directory, flush it to
// disk, then rename() it over the final name. Readers see either the old file or the complete
// new one, never a partly written one.
#pragma once

#include <string>

namespace culprit {

// "<path>.tmp.<pid>": same directory as `path`, so that rename() never crosses file systems.
std::string temporary_name_for(const std::string& path);

// fsync()s `temp_path`, renames it to `final_path` and fsync()s the directory (best effort).
// Throws std::runtime_error naming the files when the flush or the rename fails; the caller
// removes the temporary.
void commit_temporary(const std::string& temp_path, const std::string& final_path);

// Removes `path` if it exists; never throws.
void remove_quietly(const std::string& path) noexcept;

}  // namespace culprit
