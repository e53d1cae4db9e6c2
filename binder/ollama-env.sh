# Settings shared by binder/postBuild (build time) and binder/start (every launch).
# Sourced, not run.  To serve another model on Binder, change the default of LREACT_MODEL here
# (mybinder.org gives at most 2 GB of memory: only qwen2.5:0.5b fits).
export LREACT_MODEL="${LREACT_MODEL:-qwen2.5:0.5b}"   # lreact.default_model() reads it
export OLLAMA_HOST="${OLLAMA_HOST:-127.0.0.1:11434}"   # the ollama CLI, client and server read it
export OLLAMA_MODELS="${OLLAMA_MODELS:-$HOME/.ollama/models}"  # inside the image, kept from build
export OLLAMA_NUM_PARALLEL="${OLLAMA_NUM_PARALLEL:-1}"
export OLLAMA_MAX_LOADED_MODELS="${OLLAMA_MAX_LOADED_MODELS:-1}"
export OLLAMA_KEEP_ALIVE="${OLLAMA_KEEP_ALIVE:-30m}"
