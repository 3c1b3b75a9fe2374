// SPDX-License-Identifier: BSD-3-Clause
// tool_catalog: names, descriptions and input schemas of the MCP tools (what tools/list answers).
#include "mcp/tools.h"

namespace cellgate::mcp {

using nlohmann::json;

namespace {

json str(const char* description) { return {{"type", "string"}, {"description", description}}; }
json num(const char* description) { return {{"type", "number"}, {"description", description}}; }
json integer(const char* description) { return {{"type", "integer"}, {"minimum", 0}, {"description", description}}; }

json tool(const char* name, const char* title, const char* description, json properties, json required,
          bool read_only, bool destructive, bool idempotent) {
  return {{"name", name},
          {"description", description},
          {"inputSchema",
           {{"type", "object"}, {"properties", std::move(properties)}, {"required", std::move(required)},
            {"additionalProperties", false}}},
          {"annotations",
           {{"title", title},
            {"readOnlyHint", read_only},
            {"destructiveHint", destructive},
            {"idempotentHint", idempotent},
            {"openWorldHint", false}}}};
}

const json kKernelId = str("Id of a running kernel, as returned by start_kernel or list_kernels.");
const json kPath = str("File path relative to the kernel's workspace directory (the kernel's working directory).");

json build_catalog() {
  json tools = json::array();
  tools.push_back(tool("list_kernels", "List kernels",
                       "List the kernels (code execution sandboxes) you can use, with their id, kernelspec name, "
                       "execution_state (idle, busy, starting, dead) and last activity. Use it to find a kernel to "
                       "reuse before starting a new one.",
                       json::object(), json::array(), true, false, true));
  tools.push_back(tool("start_kernel", "Start a kernel",
                       "Start a new kernel: a sandboxed, stateful interpreter (python3 by default) whose working "
                       "directory is a persistent workspace. Returns the kernel id to pass to execute, read, write, "
                       "edit and process. Variables, imports and files persist between calls on the same kernel.",
                       {{"name", str("Kernelspec name, e.g. \"python3\". Omit for the server's default.")},
                        {"workspace", str("Workspace to mount as the working directory. Omit for the default.")}},
                       json::array(), false, false, false));
  tools.push_back(tool("execute", "Execute code",
                       "Run code in a kernel, like a notebook cell, and return its outputs: printed text, the value "
                       "of the last expression, images (PNG plots are returned as images), and on failure the "
                       "exception name, message and traceback. State persists: later calls see earlier variables. "
                       "Also reports files the code added, changed or removed in the workspace.",
                       {{"kernel_id", kKernelId},
                        {"code", str("Source code to run (multiple lines allowed).")},
                        {"timeout", num("Seconds before the run is interrupted. Omit for the server's limit.")}},
                       {"kernel_id", "code"}, false, false, false));
  tools.push_back(tool("read", "Read a file",
                       "Read a text file from the kernel's workspace. Long files are returned in pages of lines: "
                       "use offset and limit to read further. The answer says which lines were shown and how many "
                       "the file has.",
                       {{"kernel_id", kKernelId},
                        {"path", kPath},
                        {"offset", integer("First line to return, 0-based. Default 0.")},
                        {"limit", integer("Maximum number of lines to return.")}},
                       {"kernel_id", "path"}, true, false, true));
  tools.push_back(tool("write", "Write a file",
                       "Create or overwrite a file in the kernel's workspace with the given content. Parent "
                       "directories are created. To change part of an existing file, prefer edit.",
                       {{"kernel_id", kKernelId}, {"path", kPath}, {"content", str("The complete new file content.")}},
                       {"kernel_id", "path", "content"}, false, true, true));
  tools.push_back(tool("edit", "Edit a file",
                       "Change an existing file in the kernel's workspace, in one of two ways: give old_string and "
                       "new_string to replace an exact snippet (old_string must occur exactly once unless "
                       "replace_all is true; include enough surrounding lines to make it unique), or give diff, a "
                       "unified diff against the current content. Fails without changing anything when the text "
                       "or the diff context does not match: read the file and try again.",
                       {{"kernel_id", kKernelId},
                        {"path", kPath},
                        {"old_string", str("Exact text to replace, including whitespace and indentation.")},
                        {"new_string", str("Replacement text.")},
                        {"replace_all", {{"type", "boolean"}, {"description", "Replace every occurrence. Default false."}}},
                        {"diff", str("A unified diff (---/+++/@@ hunks) to apply instead of old_string/new_string.")}},
                       {"kernel_id", "path"}, false, true, false));
  tools.push_back(tool("process", "Run a program",
                       "Run a program in the kernel's sandbox (working directory: the workspace), without a shell, "
                       "and return its exit code, stdout and stderr. For shell features (pipes, globs, &&) run "
                       "command \"sh\" with args [\"-c\", \"...\"]. Output is truncated when very long.",
                       {{"kernel_id", kKernelId},
                        {"command", str("Program to run, e.g. \"ls\" or \"python3\" (looked up in PATH).")},
                        {"args", {{"type", "array"}, {"items", {{"type", "string"}}}, {"description", "Arguments."}}},
                        {"timeout", num("Seconds before the program is killed.")},
                        {"stdin", str("Text to feed on standard input.")}},
                       {"kernel_id", "command"}, false, true, false));
  tools.push_back(tool("snapshot", "Snapshot a workspace",
                       "Save the current state of every file in a workspace as a snapshot, to come back to with "
                       "restore. Cheap: unchanged files are stored once. Take one before risky changes.",
                       {{"workspace", str("Workspace name.")}, {"label", str("A short note to recognise the snapshot.")}},
                       {"workspace"}, false, false, false));
  tools.push_back(tool("restore", "Restore a snapshot",
                       "Make a workspace's files exactly as they were in a snapshot: files added since are removed, "
                       "changed files are put back. Returns what was added, changed and removed. Running kernels "
                       "keep their in-memory state.",
                       {{"workspace", str("Workspace name.")}, {"snapshot_id", str("Id from snapshot or list_snapshots.")}},
                       {"workspace", "snapshot_id"}, false, true, true));
  tools.push_back(tool("list_snapshots", "List snapshots",
                       "List a workspace's snapshots (id, label, time), to pick one for restore.",
                       {{"workspace", str("Workspace name.")}}, {"workspace"}, true, false, true));
  tools.push_back(tool("journal", "Read a kernel's journal",
                       "What ran on a kernel, in order: each execution's code, who ran it and how (websocket, "
                       "execute, mcp, ...), its status and outputs, and the kernel's restarts. Works for kernels "
                       "that were deleted too, until the journal's retention drops them. 100 entries per call.",
                       {{"kernel_id", str("Id of the kernel (running or deleted).")},
                        {"since", integer("Return only entries after this seq. Default 0.")}},
                       {"kernel_id"}, true, false, true));
  tools.push_back(tool("publish_artifact", "Publish an artifact",
                       "Publish a file of a workspace (a report, a chart, a result table) as an artifact: an immutable "
                       "copy, kept after the file changes or the workspace goes, that the user can download or share "
                       "with an expiring link. Returns its id, sha256, size, media type and the kernel execution that "
                       "wrote the file.",
                       {{"workspace", str("Workspace name (the kernel's workspace).")},
                        {"path", str("File path relative to the workspace.")},
                        {"name", str("File name to publish it under. Default: the file's own name.")}},
                       {"workspace", "path"}, false, false, false));
  return tools;
}

}  // namespace

const json& tool_catalog() {
  static const json catalog = build_catalog();
  return catalog;
}

}  // namespace cellgate::mcp
