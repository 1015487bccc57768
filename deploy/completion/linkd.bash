# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

# bash completion for linkd(1): its commands and each command's options.
# Installed as share/bash-completion/completions/linkd.
_linkd() {
  local cur prev cmd
  cur=${COMP_WORDS[COMP_CWORD]}
  prev=${COMP_WORDS[COMP_CWORD-1]}
  cmd=${COMP_WORDS[1]}
  if ((COMP_CWORD == 1)); then
    COMPREPLY=($(compgen -W "serve farm-health status stop stats config cache
      metrics link rewrite version help -V --version -h --help" -- "$cur"))
    return
  fi
  case $prev in
    --socket|--tls-cert|--tls-key|--client-ca|--token-file|--rename-file|\
    --out-dir)
      COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --log-level)
      COMPREPLY=($(compgen -W "trace debug info warn error off" -- "$cur"))
      return ;;
    --flavor)
      COMPREPLY=($(compgen -W "elf coff macho wasm ar ranlib lib" -- "$cur"))
      return ;;
  esac
  local opts
  case $cmd in
    serve) opts="--socket --jobs --idle-timeout --log-level --listen
      --token-file --tls-cert --tls-key --client-ca --insecure
      --max-request-bytes --max-links-per-token --link-timeout
      --stall-timeout --metrics-listen --metrics-allow" ;;
    status|farm-health) opts="--json" ;;
    stats) opts="--json --zero --all" ;;
    cache) ((COMP_CWORD == 2)) && opts="clear trim" ;;
    link) opts="--flavor --argv0 --" ;;
    rewrite) opts="--match --export-prefix --import-prefix --internal-prefix
      --rename --rename-file --runtime --kernel --input --out-dir --dry-run
      --table-out" ;;
  esac
  if [[ $cur == -* || $cmd == cache ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}
complete -F _linkd linkd
