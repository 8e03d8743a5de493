# bash completion for the maro tools.  The flags come from each tool itself
# (TOOL --list-options, derived from its option table), so they never lag
# behind it.  Installed as one file per tool under
# share/bash-completion/completions; or source it from ~/.bashrc.

_maro() {
	local cmd=$1 cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}

	COMPREPLY=()
	case $prev in
	-f|--format)
		if [ "$cmd" = maro-peers ]; then
			mapfile -t COMPREPLY < <(compgen -W 'text json prometheus' -- "$cur")
		else
			mapfile -t COMPREPLY < <(compgen -W 'cbor json diag payload' -- "$cur")
		fi
		return
		;;
	-i|--input)
		mapfile -t COMPREPLY < <(compgen -W 'cbor json' -- "$cur")
		return
		;;
	--keyfile|--config|--failed|--joblog|--sessions-from|--payloads)
		compopt -o default 2> /dev/null
		return
		;;
	esac
	case $cur in
	-*)
		mapfile -t COMPREPLY < <(compgen -W "$("$cmd" --list-options 2> /dev/null)" -- "$cur")
		# "--name=": the value follows, no blank
		[[ ${COMPREPLY[0]-} == *= ]] && compopt -o nospace 2> /dev/null
		;;
	*)
		compopt -o default 2> /dev/null
		;;
	esac
	return 0
}

complete -F _maro maro-bcast maro-dist maro-keygen maro-msg maro-peers maro-pool maro-recv \
	maro-scatter maro-send maro-wait-event
