fn main() {
    codex_free_app::run()
}
