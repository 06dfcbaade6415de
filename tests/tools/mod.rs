//! The bounded tools (`codex-free-tools`) and task memory, called through the real server.

mod changes_image;
mod exec;
mod fs;
mod task_memory;
