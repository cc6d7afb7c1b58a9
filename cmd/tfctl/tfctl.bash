# tfctl.bash: bash completion for tfctl, installed as
# $(datadir)/bash-completion/completions/tfctl by `make install`.
_tfctl() {
  local cur prev words cword
  _init_completion 2>/dev/null || {
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    words=("${COMP_WORDS[@]}")
    cword=$COMP_CWORD
  }
  local commands="health devices top run graph cluster submit jobs status step pause resume cancel logs checkpoint checkpoints restore inspect help"
  case $prev in
    -c|--config) COMPREPLY=($(compgen -f -X '!*.@(yaml|yml)' -- "$cur")); compopt -o filenames 2>/dev/null; return ;;
    --out|--run-dir) COMPREPLY=($(compgen -d -- "$cur")); compopt -o filenames 2>/dev/null; return ;;
    --cert|--ca) COMPREPLY=($(compgen -f -- "$cur")); compopt -o filenames 2>/dev/null; return ;;
    --format) COMPREPLY=($(compgen -W "yaml dot" -- "$cur")); return ;;
    -m|--master|--timeout-ms|--fetch|--target|--feed|-n|--interval|--export) return ;;
  esac
  local cmd="" i
  for ((i = 1; i < cword; i++)); do
    case ${words[i]} in
      -c|--config|-m|--master|--timeout-ms|--fetch|--target|--feed|--out|--format|--run-dir|-n|--interval|--only|--cert|--ca) ((i++)) ;;
      --export) ((i += 2)) ;;
      -*) ;;
      *) cmd=${words[i]}; break ;;
    esac
  done
  if [[ $cur == -* ]]; then
    local opts="-c --config -m --master --timeout-ms --cert --ca -h --help --version"
    case $cmd in
      run) opts="$opts --fetch --feed --target --out" ;;
      graph) opts="$opts --format --placed" ;;
      cluster) opts="-c --config --run-dir --timeout-ms --only -h --help" ;;
      status|logs) opts="$opts --follow" ;;
      step) opts="$opts -n" ;;
      top) opts="$opts --interval -n --once" ;;
      inspect) opts="--export -h --help" ;;
    esac
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    return
  fi
  case $cmd in
    "") COMPREPLY=($(compgen -W "$commands" -- "$cur")) ;;
    help) COMPREPLY=($(compgen -W "$commands" -- "$cur")) ;;
    cluster) COMPREPLY=($(compgen -W "up down restart" -- "$cur")) ;;
    run|graph) COMPREPLY=($(compgen -f -X '!*.@(tfg|yaml|yml)' -- "$cur")); compopt -o filenames 2>/dev/null ;;
    submit) COMPREPLY=($(compgen -f -X '!*.@(yaml|yml)' -- "$cur")); compopt -o filenames 2>/dev/null ;;
    inspect) COMPREPLY=($(compgen -f -- "$cur")); compopt -o filenames 2>/dev/null ;;
  esac
}
complete -F _tfctl tfctl
