# bash completion for the maro tools.  The flags come from each tool itself
# (TOOL --list-options, derived from its option table), so they never lag
# behind it; the names after -p and -P are those of the live members
# (maro-peers, asked for a second at most; nothing when it fails).
# Installed as one file per tool under share/bash-completion/completions;
# or source it from ~/.bashrc.

# The live members' names (and, with types, their types too), in the group
# and registry the command line names, else those of the environment.
_maro_peers() {
	local i args=()

	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		-g|--group|--registry)
			if [ "${COMP_WORDS[i + 1]-}" = = ]; then
				args+=("${COMP_WORDS[i]}" "${COMP_WORDS[i + 2]-}")
			else
				args+=("${COMP_WORDS[i]}" "${COMP_WORDS[i + 1]-}")
			fi
			;;
		esac
	done
	timeout 1 maro-peers "${args[@]}" -f json -W 1s 2> /dev/null |
		sed -n 's/^{"name":"\([^"]*\)","type":"\([^"]*\)".*/\1 \2/p' |
		if [ "${1-}" = types ]; then tr ' ' '\n'; else cut -d' ' -f1; fi | sort -u
}

_maro() {
	local cmd=$1 cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}

	COMPREPLY=()
	# --flag=VALUE: bash splits it at '=' (COMP_WORDBREAKS)
	if [ "$cur" = = ]; then
		prev=${COMP_WORDS[COMP_CWORD - 1]}
		cur=
	elif [ "$prev" = = ] && [ "$COMP_CWORD" -ge 2 ]; then
		prev=${COMP_WORDS[COMP_CWORD - 2]}
	fi
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
	-p|--peer)
		mapfile -t COMPREPLY < <(compgen -W "$(_maro_peers)" -- "$cur")
		return
		;;
	-P|--prefix)
		mapfile -t COMPREPLY < <(compgen -W "$(_maro_peers types)" -- "$cur")
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
		[[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == *= ]] && compopt -o nospace 2> /dev/null
		;;
	*)
		if [ "$cmd" = maro-msg ] && [ "$COMP_CWORD" -eq 1 ]; then
			mapfile -t COMPREPLY < <(compgen -W reply -- "$cur")
		else
			compopt -o default 2> /dev/null
		fi
		;;
	esac
	return 0
}

complete -F _maro maro-bcast maro-dist maro-keygen maro-msg maro-peers maro-pool maro-recv \
	maro-scatter maro-send maro-wait-event
