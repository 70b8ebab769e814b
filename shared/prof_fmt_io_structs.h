/* Payloads of the io event family's records (included by prof_format.h after struct prof_rec). */
#ifndef PROF_FMT_IO_STRUCTS_H
#define PROF_FMT_IO_STRUCTS_H

#endif
