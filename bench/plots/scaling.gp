set terminal svg size 800,440 dynamic font 'sans,12'
set output 'scaling.svg'
set logscale x 10
set grid
set key left top
set xlabel 'entries in the HWM table (resource HWMs / row tombstones)'
set ylabel 'instructions per write (callgrind Ir)'
set yrange [0:*]
plot 'scaling.dat' using 1:2 with linespoints title 'resource scope, token reused', 'scaling.dat' using 1:3 with linespoints title 'row scope INSERT (tombstone lookups)'
