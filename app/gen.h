/* fuselab gen: a random graph (engine/ir/random_graph.h) written as a
 * fuselab-graph/1 file, for differential testing (make soak). */
#ifndef FL_APP_GEN_H
#define FL_APP_GEN_H

/* The subcommand: argv[0] is "gen", the rest its options.  Prints, and
 * returns the exit status: 0 written, 2 bad usage or an unwritable
 * output. */
int fl_gen_main(int argc, char **argv);

#endif
