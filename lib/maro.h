/* maro: the internal library every tool links.  One header per module. */
#ifndef MARO_H
#define MARO_H

#include "buf.h"
#include "cborseq.h"
#include "cli.h"
#include "convert.h"
#include "message.h"

#endif
