set terminal svg size 900,420 dynamic font 'sans,11'
set output 'bench/plots/retire-state-1m.svg'
set multiplot layout 1,2 title 'fencing.* tables, all together, during the job queue (test/bench/retire_state.sh)' noenhanced
set key top left
set xlabel 'jobs done'
set ylabel 'rows'
set format x '%.0s%c'
set format y '%.0s%c'
plot 'bench/plots/retire-state-1m.dat' index 0 using 2:3 with lines lw 2 title 'retirement off', 'bench/plots/retire-state-1m.dat' index 1 using 2:3 with lines lw 2 title 'retirement on'
set ylabel 'MB'
set format y '%g'
plot 'bench/plots/retire-state-1m.dat' index 0 using 2:($4/1048576) with lines lw 2 title 'retirement off', 'bench/plots/retire-state-1m.dat' index 1 using 2:($4/1048576) with lines lw 2 title 'retirement on'
unset multiplot
